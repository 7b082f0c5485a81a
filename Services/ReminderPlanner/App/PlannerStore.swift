import Foundation
import GRDB
import LHTSchema
import ReminderPlanning
import ServiceHost

/// The planner's tables. Coverage is derived from the sessions and NoAlc days copied from the
/// session logger; decisions are keyed by occurrence, so one can never be taken twice.
enum PlannerStore {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("planner") { db in
            try db.execute(sql: """
                CREATE TABLE user (user_id TEXT PRIMARY KEY NOT NULL, time_zone TEXT NOT NULL, locale TEXT NOT NULL, paused INTEGER NOT NULL);
                CREATE TABLE reminder (
                    id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, time TEXT NOT NULL,
                    weekdays TEXT NOT NULL, lookback_hours INTEGER NOT NULL, enabled INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms);
                CREATE TABLE noalc_day (user_id TEXT NOT NULL, day TEXT NOT NULL, entry_id TEXT NOT NULL, PRIMARY KEY (user_id, day));
                CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE restored (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE announced (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, cause TEXT NOT NULL, PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE planner_state (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                """)
        }
    }

    // MARK: Users and reminders

    /// Every user's settings, read in place (a GRDB row per user was a tenth of a million-reminder start).
    static func users(_ db: Database) throws -> [UserSettings] {
        try RawStatement.run("SELECT user_id, time_zone, locale, paused FROM user", db, []) { row in
            guard let id = UserID(row.string(0)), let zone = ZoneID(row.string(1)),
                  let locale = NotificationLocale(rawValue: row.string(2)) else { return nil }
            return UserSettings(userId: id, timeZone: zone, locale: locale, paused: row.integer(3) != 0)
        }
    }

    static func save(_ user: UserSettings, _ db: Database) throws {
        try db.run("""
            INSERT INTO user (user_id, time_zone, locale, paused) VALUES (?, ?, ?, ?)
            ON CONFLICT(user_id) DO UPDATE SET time_zone = excluded.time_zone, locale = excluded.locale, paused = excluded.paused
            """, arguments: [user.userId.rawValue, user.timeZone.identifier, user.locale.rawValue, user.paused])
    }

    static func reminderCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT COUNT(*) FROM reminder") ?? 0
    }

    /// Exactly `HH:mm`, as `LocalTime(_:)` reads it, from bytes.
    static func localTime(_ text: UnsafeBufferPointer<UInt8>) -> LocalTime? {
        func digit(_ index: Int) -> Int? {
            let byte = text[index]
            return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
        }
        guard text.count == 5, text[2] == UInt8(ascii: ":"), let h1 = digit(0), let h2 = digit(1), let m1 = digit(3), let m2 = digit(4)
        else { return nil }
        return LocalTime(hour: h1 * 10 + h2, minute: m1 * 10 + m2)
    }

    /// Reads the stored `mon,tue,…` list by its three-letter names, each name packed into an integer
    /// as it is read (no strings per reminder); unknown names are ignored.
    static func weekdayMask(_ text: some Sequence<UInt8>) -> WeekdayMask {
        var bits: UInt8 = 0
        var name: UInt32 = 0, length = 0
        for byte in text {
            if byte != UInt8(ascii: ",") {
                name = name << 8 | UInt32(byte)
                length += 1
                continue
            }
            if length == 3 { bits |= weekdayBit(packedName: name) }
            name = 0
            length = 0
        }
        if length == 3 { bits |= weekdayBit(packedName: name) }
        return WeekdayMask(bits: bits)
    }

    /// The mask bit of a three-letter name packed big-endian into an integer, 0 for no weekday.
    private static func weekdayBit(packedName: UInt32) -> UInt8 {
        switch packedName {
        case 0x6D6F6E: 1 << Weekday.mon.index  // "mon"
        case 0x747565: 1 << Weekday.tue.index  // "tue"
        case 0x776564: 1 << Weekday.wed.index  // "wed"
        case 0x746875: 1 << Weekday.thu.index  // "thu"
        case 0x667269: 1 << Weekday.fri.index  // "fri"
        case 0x736174: 1 << Weekday.sat.index  // "sat"
        case 0x73756E: 1 << Weekday.sun.index  // "sun"
        default: 0
        }
    }

    static func save(_ reminder: Reminder, _ db: Database) throws {
        try RawStatement.execute("""
            INSERT OR REPLACE INTO reminder (id, user_id, activity, time, weekdays, lookback_hours, enabled, title, body, created_at_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, db, [.text(reminder.id.description), .text(reminder.userId.rawValue), .text(reminder.activity.rawValue),
                      .text(reminder.time.description), .text(reminder.weekdays.map(\.rawValue).joined(separator: ",")),
                      .integer(Int64(reminder.lookbackHours)), .integer(reminder.enabled ? 1 : 0), .text(reminder.title), .text(reminder.body),
                      .integer(reminder.createdAt.millisecondsSince1970)])
    }

    static func delete(reminder id: RecordID, _ db: Database) throws {
        try db.run("DELETE FROM reminder WHERE id = ?", arguments: [id.description])
        try db.run("DELETE FROM announced WHERE reminder_id = ?", arguments: [id.description])
        try db.run("DELETE FROM restored WHERE reminder_id = ?", arguments: [id.description])
    }

    // MARK: What covers occurrences

    /// Returns false when the session was known already (a repeated event).
    static func insert(session: StoredSession, seq: Int64, _ db: Database) throws -> Bool {
        try RawStatement.execute("INSERT OR IGNORE INTO session (id, user_id, activity, start_ms, end_ms, seq) VALUES (?, ?, ?, ?, ?, ?)", db,
                                 [.text(session.id.description), .text(session.userId.rawValue), .text(session.activity.rawValue),
                                  .integer(session.start.millisecondsSince1970), .integer(session.end.millisecondsSince1970), .integer(seq)]) > 0
    }

    /// Records that the day has an entry; the first entry stays the day's cause. False if known.
    static func insert(noalcDay day: LocalDay, user: UserID, entry: RecordID, _ db: Database) throws -> Bool {
        try db.run("INSERT OR IGNORE INTO noalc_day (user_id, day, entry_id) VALUES (?, ?, ?)",
                       arguments: [user.rawValue, day.description, entry.description])
        return db.changesCount > 0
    }

    /// What could cover the occurrences of `reminder` from `first` through `last` (one, or several
    /// in time order), for `Coverage.cause` to decide: it takes any superset, so one query serves
    /// them all. A few rows narrowed on an index, never all of a user's sessions or days.
    static func coverageCandidates(of reminder: Reminder, from first: PlannedOccurrence, through last: PlannedOccurrence,
                                   _ db: Database) throws -> [CoverageCandidate] {
        reminder.activity == .noalc
            ? try noalcCandidates(user: reminder.userId, ruleDays: first.day...last.day, db)
            : try sessionCandidates(user: reminder.userId, activity: reminder.activity, from: first.at, through: last.at,
                                    lookbackHours: reminder.lookbackHours, db)
    }

    /// The user's sessions of the activity that start no later than the last T and no earlier than a
    /// day before the first window opens — sessions last at most 24 h, so one starting earlier ends
    /// before the window: a range of `session_by_user_start`. `seq` (the session log's) is their logging order.
    static func sessionCandidates(user: UserID, activity: Activity, from first: Instant, through last: Instant, lookbackHours: Int,
                                  _ db: Database) throws -> [CoverageCandidate] {
        let windowStart = Coverage.windowStart(of: first, lookbackHours: lookbackHours)
        let earliestStart = windowStart.adding(seconds: -SessionLogRequest.longestSessionSeconds)
        return try RawStatement.run("""
            SELECT id, user_id, activity, start_ms, end_ms, seq FROM session
            WHERE user_id = ? AND activity = ? AND start_ms BETWEEN ? AND ?
            """, db, [.text(user.rawValue), .text(activity.rawValue), .integer(earliestStart.millisecondsSince1970), .integer(last.millisecondsSince1970)]
        ) { row in
            guard let id = RecordID(utf8: row.bytes(0)), let user = UserID(row.string(1)), let activity = Activity(rawValue: row.string(2))
            else { return nil }
            return .session(id: id, userId: user, activity: activity, start: Instant(millisecondsSince1970: row.integer(3)),
                            end: Instant(millisecondsSince1970: row.integer(4)), loggedOrder: row.integer(5))
        }
    }

    /// The user's NoAlc days occurrences on rule days D can ask about — each D − 1 (morning rules)
    /// and D (evening rules): a range of the primary key. A row is the day's first entry
    /// (`insert(noalcDay:)` keeps it), and its rowid the order the planner stored it in.
    static func noalcCandidates(user: UserID, ruleDays: ClosedRange<LocalDay>, _ db: Database) throws -> [CoverageCandidate] {
        try RawStatement.run("SELECT entry_id, user_id, day, rowid FROM noalc_day WHERE user_id = ? AND day BETWEEN ? AND ?", db,
                             [.text(user.rawValue), .text(ruleDays.lowerBound.adding(days: -1).description), .text(ruleDays.upperBound.description)]) { row in
            guard let id = RecordID(utf8: row.bytes(0)), let user = UserID(row.string(1)), let day = LocalDay(row.string(2)) else { return nil }
            return .noalcEntry(id: id, userId: user, day: day, loggedOrder: row.integer(3))
        }
    }

    // MARK: Occurrence state

    struct Recorded {
        let status: OccurrenceStatus
        let cause: RecordID?
    }

    /// Stores a decision; false if the occurrence was decided before (it never is decided twice).
    static func decide(_ reminder: RecordID, at: Instant, status: OccurrenceStatus, cause: RecordID?, _ db: Database) throws -> Bool {
        try RawStatement.execute("INSERT OR IGNORE INTO decision (reminder_id, at_ms, status, cause) VALUES (?, ?, ?, ?)", db,
                                 [.text(reminder.description), .integer(at.millisecondsSince1970), .text(status.rawValue),
                                  cause.map { .text($0.description) } ?? .null]) > 0
    }

    static func decisions(of reminder: RecordID, from: Instant, through: Instant, _ db: Database) throws -> [Int64: Recorded] {
        var result: [Int64: Recorded] = [:]
        for row in try db.fetchRows("SELECT at_ms, status, cause FROM decision WHERE reminder_id = ? AND at_ms BETWEEN ? AND ?",
                                    arguments: [reminder.description, from.millisecondsSince1970, through.millisecondsSince1970]) {
            if let status = OccurrenceStatus(rawValue: row["status"]) {
                result[row["at_ms"]] = Recorded(status: status, cause: (row["cause"] as String?).flatMap(RecordID.init))
            }
        }
        return result
    }

    static func restoredOccurrences(_ db: Database) throws -> Set<OccurrenceKey> {
        Set(try db.fetchRows("SELECT reminder_id, at_ms FROM restored").compactMap { row in
            RecordID(row["reminder_id"] as String).map { OccurrenceKey(reminder: $0, at: Instant(millisecondsSince1970: row["at_ms"])) }
        })
    }

    static func restore(_ reminder: RecordID, at: Instant, _ db: Database) throws {
        try db.run("INSERT OR IGNORE INTO restored (reminder_id, at_ms) VALUES (?, ?)", arguments: [reminder.description, at.millisecondsSince1970])
        try db.run("DELETE FROM announced WHERE reminder_id = ? AND at_ms = ?", arguments: [reminder.description, at.millisecondsSince1970])
    }

    /// Occurrences announced as cancelled and not decided yet, with their cause.
    static func announced(of reminder: RecordID, _ db: Database) throws -> [Int64: RecordID] {
        var result: [Int64: RecordID] = [:]
        for row in try db.fetchRows("SELECT at_ms, cause FROM announced WHERE reminder_id = ?", arguments: [reminder.description]) {
            if let cause = RecordID(row["cause"] as String) { result[row["at_ms"]] = cause }
        }
        return result
    }

    /// Records an announcement; false if this occurrence was announced already.
    static func announce(_ reminder: RecordID, at: Instant, cause: RecordID, _ db: Database) throws -> Bool {
        try db.run("INSERT OR IGNORE INTO announced (reminder_id, at_ms, cause) VALUES (?, ?, ?)",
                       arguments: [reminder.description, at.millisecondsSince1970, cause.description])
        return db.changesCount > 0
    }

    static func withdrawAnnouncement(_ reminder: RecordID, at: Int64, _ db: Database) throws {
        try db.run("DELETE FROM announced WHERE reminder_id = ? AND at_ms = ?", arguments: [reminder.description, at])
    }

    // MARK: Planner state

    static func value(_ key: String, _ db: Database) throws -> Int64? {
        try db.fetchValue(Int64.self, "SELECT value FROM planner_state WHERE key = ?", arguments: [key])
    }

    static func setValue(_ key: String, _ value: Int64, _ db: Database) throws {
        try RawStatement.execute("INSERT INTO planner_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                                 db, [.text(key), .integer(value)])
    }
}

/// One occurrence of one reminder.
struct OccurrenceKey: Hashable {
    let reminder: RecordID
    let at: Instant
}
