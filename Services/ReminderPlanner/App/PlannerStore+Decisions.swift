import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// Occurrence state.
extension PlannerStore {
    struct Recorded {
        let status: OccurrenceStatus
        let cause: RecordID?
        /// The occurrence as it was decided; nil for decisions stored before days were.
        let occurrence: PlannedOccurrence?
    }

    /// Stores a decision with its rule day and local time; false if the occurrence was decided before
    /// (it never is decided twice).
    static func decide(_ reminder: RecordID, _ planned: PlannedOccurrence, status: OccurrenceStatus, cause: RecordID?,
                       _ sql: StoreConnection) throws -> Bool {
        try sql.execute("""
            INSERT INTO decision (reminder_id, at_ms, status, cause, day, local_minute) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (reminder_id, at_ms) DO NOTHING
            """, [.blob(reminder.bytes), .integer(planned.at.millisecondsSince1970), .text(status.rawValue),
                  .text(cause?.description), .integer(Int64(planned.day.ordinal)), .integer(Int64(planned.localTime.minutesSinceMidnight))]) > 0
    }

    /// As `decide`, and false as well when the reminder's rule day at that local time is decided at
    /// another instant: by an instance whose tzdata put it elsewhere (another host's, or an earlier
    /// process's), so that each rule day is decided once whichever instance decides it. Such an
    /// instant lies within two days of this one, which keeps the look a short range of the key.
    /// Queued (`executeLater`): `isFirst` answers once it went out, with the statements around it.
    static func decideOnce(_ reminder: RecordID, _ planned: PlannedOccurrence, status: OccurrenceStatus, cause: RecordID?,
                           _ sql: StoreConnection, isFirst: @escaping (Bool) -> Void) throws {
        let at = planned.at.millisecondsSince1970, day = Int64(planned.day.ordinal), minute = Int64(planned.localTime.minutesSinceMidnight)
        try sql.executeLater("""
            INSERT INTO decision (reminder_id, at_ms, status, cause, day, local_minute) SELECT ?, ?, ?, ?, ?, ?
            WHERE NOT EXISTS (SELECT 1 FROM decision WHERE reminder_id = ? AND at_ms BETWEEN ? AND ? AND day = ? AND local_minute = ?)
            ON CONFLICT (reminder_id, at_ms) DO NOTHING
            """, [.blob(reminder.bytes), .integer(at), .text(status.rawValue), .text(cause?.description), .integer(day), .integer(minute),
                  .blob(reminder.bytes), .integer(at - 2 * 86_400_000), .integer(at + 2 * 86_400_000), .integer(day), .integer(minute)]) {
            isFirst($0 > 0)
        }
    }

    /// The reminder's decisions from `from` through `through`, by instant. A row whose status does
    /// not read back is skipped; a day or time that does not is as if not stored (decisions before days were).
    static func decisions(of reminder: RecordID, from: Instant, through: Instant, _ sql: StoreConnection) throws -> [Int64: Recorded] {
        var result: [Int64: Recorded] = [:]
        try sql.forEachRow("SELECT at_ms, status, cause, day, local_minute FROM decision WHERE reminder_id = ? AND at_ms BETWEEN ? AND ?",
                           [.blob(reminder.bytes), .integer(from.millisecondsSince1970), .integer(through.millisecondsSince1970)]) { row in
            guard let at = row.integer(0), let status = row.text(1).flatMap(OccurrenceStatus.init(rawValue:)) else { return }
            let occurrence = row.integer(3).flatMap { ordinal in
                row.integer(4).flatMap { LocalTime(hour: Int($0) / 60, minute: Int($0) % 60) }.map { localTime in
                    PlannedOccurrence(day: LocalDay(ordinal: Int(ordinal)), weekday: LocalDay(ordinal: Int(ordinal)).weekday,
                                      at: Instant(millisecondsSince1970: at), localTime: localTime)
                }
            }
            result[at] = Recorded(status: status, cause: row.text(2).flatMap(RecordID.init), occurrence: occurrence)
        }
        return result
    }

    static func restoredOccurrences(_ sql: StoreConnection) throws -> Set<OccurrenceKey> {
        Set(try sql.rows("SELECT reminder_id, at_ms FROM restored", []) { row in
            guard let id = row.text(0).flatMap(RecordID.init), let at = row.integer(1) else { return nil }
            return OccurrenceKey(reminder: id, at: Instant(millisecondsSince1970: at))
        })
    }

    static func restore(_ reminder: Reminder, at: Instant, _ sql: StoreConnection) throws {
        try sql.execute("INSERT INTO restored (reminder_id, at_ms) VALUES (?, ?) ON CONFLICT (reminder_id, at_ms) DO NOTHING",
                        [.text(reminder.id.description), .integer(at.millisecondsSince1970)])
        try withdrawAnnouncement(reminder, at: at.millisecondsSince1970, sql)
    }

    // MARK: Announced cancellations, keyed by user (`announcementsByUser`)

    /// Occurrences of `reminder` announced as cancelled, with their cause: the undecided ones, and
    /// decided ones that `forgetAnnouncements` has not taken yet.
    static func announced(of reminder: Reminder, _ sql: StoreConnection) throws -> [Int64: RecordID] {
        var result: [Int64: RecordID] = [:]
        try sql.forEachRow("SELECT at_ms, cause FROM announced WHERE user_id = ? AND reminder_id = ?", announcementKey(reminder)) { row in
            if let at = row.integer(0), let cause = row.text(1).flatMap(RecordID.init) { result[at] = cause }
        }
        return result
    }

    /// Records an announcement; false if this occurrence was announced already.
    static func announce(_ reminder: Reminder, at: Instant, cause: RecordID, _ sql: StoreConnection) throws -> Bool {
        try sql.execute("INSERT INTO announced (user_id, reminder_id, at_ms, cause) VALUES (?, ?, ?, ?) ON CONFLICT (user_id, reminder_id, at_ms) DO NOTHING",
                        announcementKey(reminder) + [.integer(at.millisecondsSince1970), .text(cause.description)]) > 0
    }

    /// Records announcements of one user's occurrences; the ones not announced already. On
    /// PostgreSQL in one statement per chunk, where each statement is a round trip.
    static func announce(_ announcements: [(reminder: Reminder, at: Instant, cause: RecordID)], _ sql: StoreConnection) throws -> Set<OccurrenceKey> {
        guard sql.dialect == .postgres else {
            return Set(try announcements.filter { try announce($0.reminder, at: $0.at, cause: $0.cause, sql) }
                .map { OccurrenceKey(reminder: $0.reminder.id, at: $0.at) })
        }
        let byBytes = Dictionary(announcements.map { ($0.reminder.id.bytes, $0.reminder.id) }) { first, _ in first }
        var inserted: Set<OccurrenceKey> = []
        try forEachAnnouncementChunk(announcements) { statement, arguments in
            try sql.forEachRow(statement + " RETURNING reminder_id, at_ms", arguments) { row in
                if let id = row.withBytes(0, { byBytes[Data($0)] }) ?? nil, let at = row.integer(1) {
                    inserted.insert(OccurrenceKey(reminder: id, at: Instant(millisecondsSince1970: at)))
                }
            }
        }
        return inserted
    }

    /// Records announcements known not to be there (read under the log row's lock in this
    /// transaction: `announcedLater`), sent with the statements after them. `ON CONFLICT DO
    /// NOTHING`: it fails only with its transaction, so a savepoint's RELEASE need not wait for it.
    static func announceLater(_ announcements: [(reminder: Reminder, at: Instant, cause: RecordID)], _ sql: StoreConnection) throws {
        try forEachAnnouncementChunk(announcements) { try sql.executeLaterFailingOnlyWithTheTransaction($0, $1) }
    }

    /// Multi-row INSERTs of `announcements`. Each row count is a statement text of its own, which
    /// the connection keeps numbered: a bounded chunk bounds them (a NoAlc reminder's month fits in one).
    private static func forEachAnnouncementChunk(_ announcements: [(reminder: Reminder, at: Instant, cause: RecordID)],
                                                 _ body: (_ statement: String, _ arguments: [SQLValue]) throws -> Void) throws {
        for start in stride(from: 0, to: announcements.count, by: 64) {
            let chunk = announcements[start..<min(start + 64, announcements.count)]
            let values = Array(repeating: "(?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            try body("INSERT INTO announced (user_id, reminder_id, at_ms, cause) VALUES \(values) ON CONFLICT (user_id, reminder_id, at_ms) DO NOTHING",
                     chunk.flatMap { announcementKey($0.reminder) + [.integer($0.at.millisecondsSince1970), .text($0.cause.description)] })
        }
    }

    /// The occurrences of `reminders` (one user's) announced between `first` and `last`, sent with
    /// the statements after it (`forEachRowLater`): `body` hears each once they went out.
    static func announcedLater(of reminders: [Reminder], from first: Instant, through last: Instant, _ sql: StoreConnection,
                               _ body: @escaping (OccurrenceKey) -> Void) throws {
        guard let user = reminders.first?.userId else { return }
        let byBytes = Dictionary(reminders.map { ($0.id.bytes, $0.id) }) { first, _ in first }
        try sql.forEachRowLater("SELECT reminder_id, at_ms FROM announced WHERE user_id = ? AND at_ms BETWEEN ? AND ?",
                                [.text(user.rawValue), .integer(first.millisecondsSince1970), .integer(last.millisecondsSince1970)]) { row in
            if let id = row.withBytes(0, { byBytes[Data($0)] }) ?? nil, let at = row.integer(1) {
                body(OccurrenceKey(reminder: id, at: Instant(millisecondsSince1970: at)))
            }
        }
    }

    /// Expects (`StoreConnection.expectLater`) that no occurrence of `occurrences` (one user's) is
    /// announced: none of their reminders has one announced from the first instant through the last.
    static func expectNoneAnnounced(_ occurrences: [(reminder: Reminder, at: Instant)], _ sql: StoreConnection) throws {
        guard let user = occurrences.first?.reminder.userId, let first = occurrences.map(\.at).min(), let last = occurrences.map(\.at).max() else { return }
        let reminders = Array(Set(occurrences.map(\.reminder.id)))
        try sql.expectLater("""
            NOT EXISTS (SELECT 1 FROM announced WHERE user_id = ? AND at_ms BETWEEN ? AND ?
                        AND reminder_id IN (\(Array(repeating: "?", count: reminders.count).joined(separator: ", "))))
            """, [.text(user.rawValue), .integer(first.millisecondsSince1970), .integer(last.millisecondsSince1970)] + reminders.map { .blob($0.bytes) },
            "no covered occurrence announced yet")
    }

    static func withdrawAnnouncement(_ reminder: Reminder, at: Int64, _ sql: StoreConnection) throws {
        try sql.execute("DELETE FROM announced WHERE user_id = ? AND reminder_id = ? AND at_ms = ?", announcementKey(reminder) + [.integer(at)])
    }

    /// Forgets `user`'s announcements of occurrences at or before `decidedThrough`: decided, they
    /// are never announced again, and without this they stayed until their reminder was edited.
    static func forgetAnnouncements(of user: UserID, through decidedThrough: Instant, _ sql: StoreConnection) throws {
        try sql.executeLaterFailingOnlyWithTheTransaction("DELETE FROM announced WHERE user_id = ? AND at_ms <= ?",
                                                          [.text(user.rawValue), .integer(decidedThrough.millisecondsSince1970)])
    }

    static func announcementKey(_ reminder: Reminder) -> [SQLValue] { [.text(reminder.userId.rawValue), .blob(reminder.id.bytes)] }

    // MARK: Rule days moved by new zone rules

    /// A few rows at most (none but after a tzdata update), read once at start.
    static func movedDecidedDays(_ sql: StoreConnection) throws -> [RecordID: MovedDecidedDay] {
        var result: [RecordID: MovedDecidedDay] = [:]
        try sql.forEachRow("SELECT reminder_id, day, until_ms FROM moved_decided_day", []) { row in
            if let id = row.text(0).flatMap(RecordID.init), let day = row.integer(1), let until = row.integer(2) {
                result[id] = MovedDecidedDay(day: LocalDay(ordinal: Int(day)), until: Instant(millisecondsSince1970: until))
            }
        }
        return result
    }

    static func save(_ moved: MovedDecidedDay, of reminder: RecordID, _ sql: StoreConnection) throws {
        try sql.execute("""
            INSERT INTO moved_decided_day (reminder_id, day, until_ms) VALUES (?, ?, ?)
            ON CONFLICT (reminder_id) DO UPDATE SET day = excluded.day, until_ms = excluded.until_ms
            """, [.text(reminder.description), .integer(Int64(moved.day.ordinal)), .integer(moved.until.millisecondsSince1970)])
    }

    static func forgetMovedDecidedDay(of reminder: RecordID, _ sql: StoreConnection) throws {
        try sql.execute("DELETE FROM moved_decided_day WHERE reminder_id = ?", [.text(reminder.description)])
    }

    static func forgetMovedDecidedDays(through: Instant, _ sql: StoreConnection) throws {
        try sql.execute("DELETE FROM moved_decided_day WHERE until_ms <= ?", [.integer(through.millisecondsSince1970)])
    }
}
