import Foundation
import GRDB
import LHTClient
import LHTSchema
import Logging
import ReminderPlanner
import ReminderPlanning
import ServiceHost
import SQLiteStorage
import Storage
import SessionLogger
import TestSupport
import ZeroMQ
/// The seeded reminders the planner benchmark starts from, and the storage floors it is compared with.
extension PlannerBenchmark {
    /// Reminder k of user u: at minute (u·perUser + k) mod 1440 every day, mindfulness and workout by turns.
    static func seededRule(user: Int, k: Int, perUser: Int) -> StoredRule {
        let minute = (user * perUser + k) % 1440
        return StoredRule(activity: k % 2 == 0 ? .mindfulness : .workout, time: LocalTime(hour: minute / 60, minute: minute % 60)!,
                          weekdays: WeekdayMask(bits: 127), lookbackHours: 12, enabled: true)
    }

    static let seededCreatedMs = clockStart.adding(seconds: -86_400).millisecondsSince1970

    /// Users in Europe/Berlin, each with `perUser` reminders (`seededRule`); `activePercent` of
    /// them with a session of each activity two hours before `clockStart`, 20 minutes long, in the
    /// 12-hour windows of the burst's occurrences. Stored as the planner stores what it follows (the
    /// copy, and its user's latest session end), at seqs below any the logger gives.
    static func seed(directory: String, users: Int, perUser: Int, activePercent: Int = 0) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let database = try DatabaseQueue(path: directory + "/reminder-planner.sqlite", configuration: configuration)
        try database.write { db in
            for user in 0..<users {
                try db.run("INSERT INTO user (user_id, time_zone, locale, paused) VALUES (?, 'Europe/Berlin', 'en', 0)", arguments: ["u\(user)"])
                for k in 0..<perUser {
                    try db.run("INSERT INTO reminder (id, user_id, rule, title, body, created_at_ms) VALUES (?, ?, ?, NULL, NULL, ?)",
                               arguments: [RecordID().bytes, "u\(user)", seededRule(user: user, k: k, perUser: perUser).bits, seededCreatedMs])
                }
            }
            // Every partition decided through the clock's start (the planner's start made the rows).
            for partition in 0..<Ownership.partitionCount {
                try db.run("""
                    INSERT INTO decided_through (partition_index, at_ms) VALUES (?, ?)
                    ON CONFLICT (partition_index) DO UPDATE SET at_ms = excluded.at_ms
                    """, arguments: [partition, clockStart.millisecondsSince1970])
            }
        }
        // Copied into the file, as a running planner's checkpointer would have: the scan below and
        // the start both read the file, not a log of the whole seed.
        try database.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        guard activePercent > 0 else { return }
        // The copies of the logger's sessions are in the projection file (closed cleanly by the planner that made it).
        try DatabaseQueue(path: directory + "/reminder-planner.projection.sqlite", configuration: configuration).write { db in
            for user in 0..<users where user % 100 < activePercent {
                for (n, activity) in [Activity.mindfulness, .workout].enumerated() {
                    let start = clockStart.adding(seconds: Int64(-2 * 3600 + n * 1800))
                    let end = start.adding(seconds: 1200).millisecondsSince1970
                    try db.run("INSERT INTO session (id, user_id, activity, start_ms, end_ms, seq) VALUES (?, ?, ?, ?, ?, ?)",
                               arguments: [RecordID().description, "u\(user)", activity.rawValue, start.millisecondsSince1970, end, -(2 * user + n + 1)])
                    try db.run("INSERT INTO latest_session_end (user_id, activity, end_ms) VALUES (?, ?, ?)",
                               arguments: ["u\(user)", activity.rawValue, end])
                }
            }
        }
    }

    /// SQLite stepping through the planner's query and reading every column in place, each text's
    /// and blob's bytes summed: what loading costs before anything is parsed or kept. (GRDB's `Row.fetchAll`
    /// spends most of its time building rows, which makes a generous baseline.)
    static func scanReminders(directory: String) throws {
        let database = try DatabaseQueue(path: directory + "/reminder-planner.sqlite")
        var checksum = 0
        try database.read { db in
            _ = try RawStatement.run("""
                SELECT id, user_id, rule, title, body, created_at_ms FROM reminder
                """, db, []) { row -> Void? in
                checksum &+= row.blob(0).reduce(0) { $0 &+ Int($1) }
                for column: Int32 in [1, 3, 4] { checksum &+= row.bytes(column).reduce(0) { $0 &+ Int($1) } }
                checksum &+= Int(row.integer(2) &+ row.integer(5))
                return nil
            }
        }
        precondition(checksum != 0, "no reminder rows were read")
    }

    /// The persistence floor: as many rows as decisions, one transaction, synchronous=FULL like the
    /// services. With `envelopeBytes`, each row also gets an outbox row of that size in the same
    /// transaction, as every decision stores its event (PROTOCOL "Events": stored, then published);
    /// without `decisionRows`, the outbox rows alone.
    static func insertFloor(rows: Int, decisionRows: Bool = true, envelopeBytes: Int? = nil) throws {
        let schema = "CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, PRIMARY KEY (reminder_id, at_ms))"
        let envelope = envelopeBytes.map { Data(repeating: UInt8(ascii: "x"), count: $0) }
        try ScratchDatabase.with(schema: schema) { database in
            try database.write { db in
                for n in 0..<rows {
                    if decisionRows { try db.run("INSERT INTO decision VALUES (?, ?, 'fired')", arguments: [RecordID().description, n]) }
                    if let envelope {
                        try db.run("INSERT INTO outbox VALUES (?, ?, ?)", arguments: [n + 1, "reminder.due.u\(n % 100_000).mindfulness", envelope])
                    }
                }
            }
        }
    }
}
