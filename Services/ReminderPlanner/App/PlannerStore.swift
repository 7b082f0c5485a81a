import Foundation
import GRDB
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

/// The planner's tables. Coverage is derived from the sessions and NoAlc days copied from the
/// session logger; decisions are keyed by occurrence, so one can never be taken twice. Both are
/// in the projection file: the decisions are the planner's own events, replayed from its log when
/// the file is rebuilt, and the copies are the logger's, followed again from its start then (a
/// session applied twice changes nothing). Users, reminders, cancellations and the clock are durable.
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
        // A reminder row as loading reads it fastest: the id as its 16 bytes, the time as minutes since
        // midnight, the weekdays as a mask (bit n: `Weekday.index` n). Parsing the text forms was a
        // sixth of reading a million rows, and the table and its id index take half the space.
        migrator.registerMigration("reminder-compact-rows") { db in
            let idBytes = DatabaseFunction("lht_record_id_bytes", argumentCount: 1, pure: true) { values in
                String.fromDatabaseValue(values[0]).flatMap(RecordID.init)?.bytes
            }
            db.add(function: idBytes)
            defer { db.remove(function: idBytes) }
            let weekdayBits = Weekday.allCases.map { "((instr(weekdays, '\($0.rawValue)') > 0) << \($0.index))" }.joined(separator: " | ")
            // A row whose id does not parse was never loaded either: it is not carried over.
            try db.execute(sql: """
                CREATE TABLE reminder_compact (
                    id BLOB PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, minute_of_day INTEGER NOT NULL,
                    weekday_mask INTEGER NOT NULL, lookback_hours INTEGER NOT NULL, enabled INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                INSERT INTO reminder_compact
                    SELECT lht_record_id_bytes(id), user_id, activity,
                           CAST(substr(time, 1, 2) AS INTEGER) * 60 + CAST(substr(time, 4, 2) AS INTEGER), \(weekdayBits),
                           lookback_hours, enabled, title, body, created_at_ms
                    FROM reminder WHERE lht_record_id_bytes(id) IS NOT NULL ORDER BY rowid;
                DROP TABLE reminder;
                ALTER TABLE reminder_compact RENAME TO reminder;
                """)
        }
        // The small fields as one column (`StoredRule`), with a view that shows them as columns.
        migrator.registerMigration("reminder-rule-column") { db in
            try db.execute(sql: """
                CREATE TABLE reminder_rule (
                    id BLOB PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, rule INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                INSERT INTO reminder_rule
                    SELECT id, user_id, \(StoredRule.sqlFromColumns), title, body, created_at_ms
                    FROM reminder WHERE \(StoredRule.sqlValidColumns) ORDER BY rowid;
                DROP TABLE reminder;
                ALTER TABLE reminder_rule RENAME TO reminder;
                CREATE VIEW reminder_fields AS SELECT id, user_id, \(StoredRule.sqlColumns), title, body, created_at_ms FROM reminder;
                """)
        }
        // A decision remembers its rule day and local time: after new zone rules move that day's
        // instant, the day is still known as decided (NULL in decisions taken before).
        migrator.registerMigration("decision-rule-day") { db in
            try db.execute(sql: """
                ALTER TABLE decision ADD COLUMN day INTEGER;
                ALTER TABLE decision ADD COLUMN local_minute INTEGER;
                """)
        }
        // `ReminderPlanner.movedDecidedDays`, stored with the step that planned again: a restart
        // before a moved day's new instant must not decide it again.
        migrator.registerMigration("moved-decided-day") { db in
            try db.execute(sql: "CREATE TABLE moved_decided_day (reminder_id TEXT PRIMARY KEY NOT NULL, day INTEGER NOT NULL, until_ms INTEGER NOT NULL)")
        }
        migrator.registerMigration("decisions and copies are a projection") { db in
            try db.execute(sql: """
                DROP TABLE main.decision; DROP TABLE main.session; DROP TABLE main.noalc_day;
                DELETE FROM main.cursor WHERE upstream = '\(ServiceName.sessionLogger.rawValue)'
                """)
        }
    }

    /// The decisions, replayed from the decision events when the projection file is behind or
    /// rebuilt, and the copies of the logger's sessions and NoAlc days (its feed refills them).
    static let projection = Projection(migrate: { migrator in
        migrator.registerMigration("decisions and copies") { db in
            try db.execute(sql: """
                CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms);
                CREATE TABLE noalc_day (user_id TEXT NOT NULL, day TEXT NOT NULL, entry_id TEXT NOT NULL, PRIMARY KEY (user_id, day));
                """)
        }
    }, replay: { event, sql in
        let decided: Occurrence? = switch event.data {
        case .reminderDue(let due) where !due.test: due.occurrence
        case .occurrence(let occurrence) where [.suppressed, .skipped, .missed].contains(occurrence.status): occurrence
        default: nil  // not a decision: a cancellation, a restore, a test notification, a reminder's change
        }
        guard let decided else { return }
        let planned = PlannedOccurrence(day: decided.day, weekday: decided.weekday, at: decided.at, localTime: decided.localTime)
        _ = try decide(decided.reminderId, planned, status: decided.status, cause: decided.cause, (sql as! SQLiteStoreConnection).db)
    })

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

    static func save(_ reminder: Reminder, _ db: Database) throws {
        try RawStatement.execute("""
            INSERT OR REPLACE INTO reminder (id, user_id, rule, title, body, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)
            """, db, [.blob(reminder.id.bytes), .text(reminder.userId.rawValue), .integer(StoredRule(reminder).bits),
                      .text(reminder.title), .text(reminder.body), .integer(reminder.createdAt.millisecondsSince1970)])
    }

    static func delete(reminder id: RecordID, _ db: Database) throws {
        try db.run("DELETE FROM reminder WHERE id = ?", arguments: [id.bytes])
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
        /// The occurrence as it was decided; nil for decisions stored before days were.
        let occurrence: PlannedOccurrence?
    }

    /// Stores a decision with its rule day and local time; false if the occurrence was decided before
    /// (it never is decided twice).
    static func decide(_ reminder: RecordID, _ planned: PlannedOccurrence, status: OccurrenceStatus, cause: RecordID?,
                       _ db: Database) throws -> Bool {
        try RawStatement.execute("INSERT OR IGNORE INTO decision (reminder_id, at_ms, status, cause, day, local_minute) VALUES (?, ?, ?, ?, ?, ?)", db,
                                 [.text(reminder.description), .integer(planned.at.millisecondsSince1970), .text(status.rawValue),
                                  cause.map { .text($0.description) } ?? .null, .integer(Int64(planned.day.ordinal)),
                                  .integer(Int64(planned.localTime.minutesSinceMidnight))]) > 0
    }

    static func decisions(of reminder: RecordID, from: Instant, through: Instant, _ db: Database) throws -> [Int64: Recorded] {
        var result: [Int64: Recorded] = [:]
        for row in try db.fetchRows("SELECT at_ms, status, cause, day, local_minute FROM decision WHERE reminder_id = ? AND at_ms BETWEEN ? AND ?",
                                    arguments: [reminder.description, from.millisecondsSince1970, through.millisecondsSince1970]) {
            guard let status = OccurrenceStatus(rawValue: row["status"]) else { continue }
            let at: Int64 = row["at_ms"]
            let occurrence = (row["day"] as Int?).flatMap { ordinal in
                (row["local_minute"] as Int?).flatMap { LocalTime(hour: $0 / 60, minute: $0 % 60) }.map { localTime in
                    PlannedOccurrence(day: LocalDay(ordinal: ordinal), weekday: LocalDay(ordinal: ordinal).weekday,
                                      at: Instant(millisecondsSince1970: at), localTime: localTime)
                }
            }
            result[at] = Recorded(status: status, cause: (row["cause"] as String?).flatMap(RecordID.init), occurrence: occurrence)
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

    // MARK: Rule days moved by new zone rules

    /// A few rows at most (none but after a tzdata update), read once at start.
    static func movedDecidedDays(_ db: Database) throws -> [RecordID: MovedDecidedDay] {
        var result: [RecordID: MovedDecidedDay] = [:]
        for row in try db.fetchRows("SELECT reminder_id, day, until_ms FROM moved_decided_day") {
            if let id = RecordID(row["reminder_id"] as String) {
                result[id] = MovedDecidedDay(day: LocalDay(ordinal: row["day"]), until: Instant(millisecondsSince1970: row["until_ms"]))
            }
        }
        return result
    }

    static func save(_ moved: MovedDecidedDay, of reminder: RecordID, _ db: Database) throws {
        try db.run("INSERT OR REPLACE INTO moved_decided_day (reminder_id, day, until_ms) VALUES (?, ?, ?)",
                   arguments: [reminder.description, moved.day.ordinal, moved.until.millisecondsSince1970])
    }

    static func forgetMovedDecidedDay(of reminder: RecordID, _ db: Database) throws {
        try db.run("DELETE FROM moved_decided_day WHERE reminder_id = ?", arguments: [reminder.description])
    }

    static func forgetMovedDecidedDays(through: Instant, _ db: Database) throws {
        try db.run("DELETE FROM moved_decided_day WHERE until_ms <= ?", arguments: [through.millisecondsSince1970])
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
