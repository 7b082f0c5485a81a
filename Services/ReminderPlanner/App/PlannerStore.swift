import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

/// The planner's tables. Coverage is derived from the sessions and NoAlc days copied from the
/// session logger; decisions are keyed by occurrence, so one can never be taken twice. On SQLite the
/// copies are in the projection file, followed again from the logger's start when it is rebuilt (a
/// session applied twice changes nothing), and the decisions in a file of their own, applied from the
/// planner's own decision events by a thread behind its log (`decisionProjection`). On PostgreSQL they are
/// plain tables beside the others. Users, reminders, cancellations and the clock are durable.
///
/// Every statement is written once for both backends (`StoreConnection`: `?` placeholders,
/// `ON CONFLICT`), and rows are read through `SQLRow`, whose readers never trap: a row that does not
/// read back is skipped. The reminder id is stored as its 16 bytes, the rule as one integer (`StoredRule`).
enum PlannerStore {
    /// Both backends: SQLite's file as its migrations left it, with the projection file and the
    /// decisions' file; PostgreSQL's tables as they are now, the projections' among them (written in
    /// the same transactions, never rebuilt). On PostgreSQL the instances share the decisions by
    /// partitions of users.
    static let layout = StoreLayout(sqlite: .tables(sqliteMigrations, projection: projection,
                                                    behindTheLog: TablesBehindTheLog(file: "decisions", projection: decisionProjection)),
                                    postgresMigrations: [.postgres("planner", firstTables(.postgres)), partitionsMigration, sessionsBySeq,
                                                         decisionsByBytes, latestSessionEnds, announcementsByUser],
                                    partitioned: true)

    /// The occurrence an event decided; nil for any other event: a cancellation, a restore, a test
    /// notification, a reminder's change.
    static func decision(in data: EventData) -> Occurrence? {
        switch data {
        case .reminderDue(let due) where !due.test: due.occurrence
        case .occurrence(let occurrence) where [.suppressed, .skipped, .missed].contains(occurrence.status): occurrence
        default: nil
        }
    }
}

/// One occurrence of one reminder.
struct OccurrenceKey: Hashable {
    let reminder: RecordID
    let at: Instant
}

extension PlannedOccurrence {
    /// The occurrence as its event tells it.
    init(_ occurrence: Occurrence) {
        self.init(day: occurrence.day, weekday: occurrence.weekday, at: occurrence.at, localTime: occurrence.localTime)
    }
}
