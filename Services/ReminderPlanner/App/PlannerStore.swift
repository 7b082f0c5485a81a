import Foundation
import GRDB
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
            db.add(function: recordIDBytes)
            defer { db.remove(function: recordIDBytes) }
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
        migrator.registerMigration(partitionsMigration.name) { db in
            for statement in partitionsMigration.statements { try db.execute(sql: statement) }
        }
        // `announcementsByUser`, in its key's b-tree. A row whose reminder is gone was never read again.
        migrator.registerMigration(announcementsByUser.name) { db in
            db.add(function: recordIDBytes)
            defer { db.remove(function: recordIDBytes) }
            try db.execute(sql: """
                CREATE TABLE announced_by_user (user_id TEXT NOT NULL, reminder_id BLOB NOT NULL, at_ms INTEGER NOT NULL, cause TEXT NOT NULL,
                    PRIMARY KEY (user_id, reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO announced_by_user
                    SELECT reminder.user_id, reminder.id, announced.at_ms, announced.cause
                    FROM announced JOIN reminder ON reminder.id = lht_record_id_bytes(announced.reminder_id);
                DROP TABLE announced;
                ALTER TABLE announced_by_user RENAME TO announced;
                """)
        }
    }

    /// Announced cancellations keyed by user first: the occurrences one session covers are all its
    /// user's, so they share a leaf, where a key by reminder id (random) took a leaf of the key's
    /// index for each reminder covered and one of the table: 8 of a covering session's 13 pages,
    /// 4 now (README "Announced cancellations"). The reminder id is its 16 bytes, as in `reminder`
    /// and `decision`.
    static let announcementsByUser = PostgresMigration("announcements by user", [
        "CREATE TABLE announced_by_user (user_id TEXT NOT NULL, reminder_id BYTEA NOT NULL, at_ms BIGINT NOT NULL, cause TEXT NOT NULL, PRIMARY KEY (user_id, reminder_id, at_ms))",
        """
        INSERT INTO announced_by_user
            SELECT reminder.user_id, reminder.id, announced.at_ms, announced.cause
            FROM announced JOIN reminder ON reminder.id = CASE WHEN announced.reminder_id ~ '\(recordIDPattern)' THEN decode(replace(announced.reminder_id, '-', ''), 'hex') END
        """,
        "DROP TABLE announced",
        "ALTER TABLE announced_by_user RENAME TO announced",
    ])

    /// A record id's text, as PostgreSQL's migrations check it before decoding it.
    private static let recordIDPattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

    /// How far each partition is decided, starting where the one `decidedThroughMs` was; and the
    /// users whose settings or reminders changed, for the other instances sharing the store
    /// (`ReminderPlanner.followOtherInstances`). The same statements on both backends.
    static let partitionsMigration = PostgresMigration("partitions", [
        "CREATE TABLE decided_through (partition_index INTEGER PRIMARY KEY NOT NULL, at_ms BIGINT NOT NULL)",
        """
        INSERT INTO decided_through (partition_index, at_ms)
            WITH RECURSIVE partition_index (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM partition_index WHERE i < \(Ownership.partitionCount - 1))
            SELECT i, value FROM partition_index, planner_state WHERE key = 'decidedThroughMs'
        """,
        "DELETE FROM planner_state WHERE key = 'decidedThroughMs'",
        "CREATE TABLE changed_user (user_id TEXT PRIMARY KEY NOT NULL, version BIGINT NOT NULL)",
        "CREATE INDEX changed_user_by_version ON changed_user (version)",
    ])

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
        migrator.registerMigration(sessionsBySeq.name) { db in
            try db.execute(sql: """
                CREATE TABLE session_by_seq (id TEXT NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, seq INTEGER PRIMARY KEY NOT NULL);
                INSERT OR REPLACE INTO session_by_seq (id, user_id, activity, start_ms, end_ms, seq)
                    SELECT id, user_id, activity, start_ms, end_ms, seq FROM session ORDER BY rowid;
                DROP TABLE session;
                ALTER TABLE session_by_seq RENAME TO session;
                CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms);
                """)
        }
        migrator.registerMigration("decisions in their key's b-tree") { db in
            try db.execute(sql: """
                CREATE TABLE decision_by_key (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO decision_by_key SELECT reminder_id, at_ms, status, cause, day, local_minute FROM decision;
                DROP TABLE decision;
                ALTER TABLE decision_by_key RENAME TO decision;
                """)
        }
        // To `decisionProjection`, a file a thread applies from the decision events behind the log (#30).
        migrator.registerMigration("decisions behind the log") { db in try db.execute(sql: "DROP TABLE decision") }
        migrator.registerMigration(latestSessionEnds.name) { db in
            for statement in latestSessionEnds.statements { try db.execute(sql: statement) }
        }
    }, replay: nil)

    /// The decisions, one row per decision event, keyed by occurrence: applied from the log on a
    /// thread of their own after each commit (`StoreLayout.behindTheLog`), so deciding writes the
    /// event alone; replayed from the log into a file that is new, rebuilt or behind.
    ///
    /// The reminder's id is its 16 bytes (on PostgreSQL too: `decisionsByBytes`): as 36 characters of
    /// text it made the row half as long again, and the thread's b-tree writes and key comparisons with it.
    static let decisionProjection = Projection(migrate: { migrator in
        migrator.registerMigration("decisions") { db in
            try db.execute(sql: """
                CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms)) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("decisions by the reminder id's bytes") { db in
            db.add(function: recordIDBytes)
            defer { db.remove(function: recordIDBytes) }
            try db.execute(sql: """
                CREATE TABLE decision_by_bytes (reminder_id BLOB NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO decision_by_bytes
                    SELECT lht_record_id_bytes(reminder_id), at_ms, status, cause, day, local_minute FROM decision
                    WHERE lht_record_id_bytes(reminder_id) IS NOT NULL;
                DROP TABLE decision;
                ALTER TABLE decision_by_bytes RENAME TO decision;
                """)
        }
    }, eventTypes: [Events.reminderDue.name, Events.reminderSuppressed.name, Events.reminderSkipped.name, Events.reminderMissed.name], replay: { _, data, sql in
        guard let decided = decision(in: data) else { return }
        _ = try decide(decided.reminderId, PlannedOccurrence(decided), status: decided.status, cause: decided.cause, sql)
    })

    /// `lht_record_id_bytes(text)`: a record id's 16 bytes, NULL for text that is not one; for migrations.
    private static let recordIDBytes = DatabaseFunction("lht_record_id_bytes", argumentCount: 1, pure: true) { values in
        String.fromDatabaseValue(values[0]).flatMap(RecordID.init)?.bytes
    }

    /// The occurrence an event decided; nil for any other event: a cancellation, a restore, a test
    /// notification, a reminder's change.
    static func decision(in data: EventData) -> Occurrence? {
        switch data {
        case .reminderDue(let due) where !due.test: due.occurrence
        case .occurrence(let occurrence) where [.suppressed, .skipped, .missed].contains(occurrence.status): occurrence
        default: nil
        }
    }

    /// Both backends: SQLite's file as its migrations left it, with the projection file and the
    /// decisions' file; PostgreSQL's tables as they are now, the projections' among them (written in
    /// the same transactions, never rebuilt). On PostgreSQL the instances share the decisions by
    /// partitions of users.
    static let layout = StoreLayout(sqliteMigrations: migrate, projection: projection, behindTheLog: ("decisions", decisionProjection),
                                    postgresMigrations: [PostgresMigration("planner", firstTables(.postgres)), partitionsMigration, sessionsBySeq,
                                                         decisionsByBytes, latestSessionEnds, announcementsByUser],
                                    partitioned: true)

    /// The copies of the logger's sessions keyed by its seq, not by their ids: a session's copy is
    /// appended at the end of the table, where a random id's index took a page of its own for each
    /// (README "The planner's copies of sessions"). A repeated event has the same seq and id; a seq
    /// the copies hold with another id is of an earlier history the upstream no longer has
    /// (`--accept-upstream-reset`), and the new history's session takes its place (`insert`).
    static let sessionsBySeq = PostgresMigration("sessions by seq", [
        "DELETE FROM session a USING session b WHERE a.seq = b.seq AND a.ctid < b.ctid",
        "ALTER TABLE session DROP CONSTRAINT session_pkey",
        "ALTER TABLE session ADD PRIMARY KEY (seq)",
    ])

    /// PostgreSQL's decisions keyed by the reminder id's 16 bytes, as SQLite's (`decisionProjection`).
    /// Every id there was written from a `RecordID`; a row whose id is not one could not be asked for.
    static let decisionsByBytes = PostgresMigration("decisions by the reminder id's bytes", [
        "DELETE FROM decision WHERE reminder_id !~ '\(recordIDPattern)'",
        "ALTER TABLE decision ALTER COLUMN reminder_id TYPE BYTEA USING decode(replace(reminder_id, '-', ''), 'hex')",
    ])

    /// Each user's latest session end by activity, kept with the copies (`insert(session:)`) and
    /// filled from them once: what the start reads for `LatestLogged`, a row per user and activity.
    static let latestSessionEnds = PostgresMigration("latest session ends", [
        "CREATE TABLE latest_session_end (user_id TEXT NOT NULL, activity TEXT NOT NULL, end_ms BIGINT NOT NULL, PRIMARY KEY (user_id, activity))",
        "INSERT INTO latest_session_end (user_id, activity, end_ms) SELECT user_id, activity, MAX(end_ms) FROM session GROUP BY user_id, activity",
    ])

    /// The tables as SQLite's migrations and projection leave them, in SQL both backends take
    /// (`BIGINT` is an integer column to SQLite). PostgreSQL creates them from here; SQLite's come
    /// from its migration history, and a test checks that they agree (`PlannerStoreLayoutTests`).
    /// `user` is quoted everywhere: a reserved word to PostgreSQL. SQLite's `noalc_day` has a
    /// `rowid`, the order the planner stored the days in (`noalcCandidates`): PostgreSQL gets an
    /// identity column of that name.
    static func tables(_ dialect: SQLDialect) -> [String] {
        firstTables(dialect, sessionsBySeq: true, decisionsByBytes: true, announcementsByUser: true)
            + (partitionsMigration.statements + latestSessionEnds.statements).filter { $0.hasPrefix("CREATE") }
    }

    /// The tables of PostgreSQL's first migration; with `sessionsBySeq`, `decisionsByBytes` and
    /// `announcementsByUser`, as those migrations leave them.
    private static func firstTables(_ dialect: SQLDialect, sessionsBySeq: Bool = false, decisionsByBytes: Bool = false,
                                    announcementsByUser: Bool = false) -> [String] {
        let storedOrder = dialect == .postgres ? "rowid BIGINT GENERATED ALWAYS AS IDENTITY, " : ""
        return [
            """
            CREATE TABLE "user" (user_id TEXT PRIMARY KEY NOT NULL, time_zone TEXT NOT NULL, locale TEXT NOT NULL, paused INTEGER NOT NULL)
            """,
            """
            CREATE TABLE reminder (
                id \(dialect.bytesType) PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, rule BIGINT NOT NULL,
                title TEXT, body TEXT, created_at_ms BIGINT NOT NULL)
            """,
            """
            CREATE TABLE restored (reminder_id TEXT NOT NULL, at_ms BIGINT NOT NULL, PRIMARY KEY (reminder_id, at_ms))
            """,
            announcementsByUser ? """
            CREATE TABLE announced (user_id TEXT NOT NULL, reminder_id \(dialect.bytesType) NOT NULL, at_ms BIGINT NOT NULL, cause TEXT NOT NULL,
                PRIMARY KEY (user_id, reminder_id, at_ms))
            """ : """
            CREATE TABLE announced (reminder_id TEXT NOT NULL, at_ms BIGINT NOT NULL, cause TEXT NOT NULL, PRIMARY KEY (reminder_id, at_ms))
            """,
            "CREATE TABLE planner_state (key TEXT PRIMARY KEY NOT NULL, value BIGINT NOT NULL)",
            "CREATE TABLE moved_decided_day (reminder_id TEXT PRIMARY KEY NOT NULL, day INTEGER NOT NULL, until_ms BIGINT NOT NULL)",
            // SQLite's projection file.
            """
            CREATE TABLE decision (reminder_id \(decisionsByBytes ? dialect.bytesType : "TEXT") NOT NULL, at_ms BIGINT NOT NULL, status TEXT NOT NULL,
                cause TEXT, day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms))
            """,
            """
            CREATE TABLE session (id TEXT \(sessionsBySeq ? "" : "PRIMARY KEY ")NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                start_ms BIGINT NOT NULL, end_ms BIGINT NOT NULL, seq BIGINT \(sessionsBySeq ? "PRIMARY KEY " : "")NOT NULL)
            """,
            "CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms)",
            "CREATE TABLE noalc_day (user_id TEXT NOT NULL, day TEXT NOT NULL, entry_id TEXT NOT NULL, \(storedOrder)PRIMARY KEY (user_id, day))",
        ]
    }

    // MARK: Users and reminders

    /// Every user's settings. A row that does not read back is skipped.
    static func users(_ sql: StoreConnection, only: UserID? = nil) throws -> [UserSettings] {
        try sql.rows(#"SELECT user_id, time_zone, locale, paused FROM "user""# + (only == nil ? "" : " WHERE user_id = ?"),
                     only.map { [.text($0.rawValue)] } ?? []) { row in
            guard let id = row.text(0).flatMap(UserID.init), let zone = row.text(1).flatMap(ZoneID.init),
                  let locale = row.text(2).flatMap(NotificationLocale.init(rawValue:)), let paused = row.integer(3) else { return nil }
            return UserSettings(userId: id, timeZone: zone, locale: locale, paused: paused != 0)
        }
    }

    static func save(_ user: UserSettings, _ sql: StoreConnection) throws {
        try sql.execute("""
            INSERT INTO "user" (user_id, time_zone, locale, paused) VALUES (?, ?, ?, ?)
            ON CONFLICT (user_id) DO UPDATE SET time_zone = excluded.time_zone, locale = excluded.locale, paused = excluded.paused
            """, [.text(user.userId.rawValue), .text(user.timeZone.identifier), .text(user.locale.rawValue), .integer(user.paused ? 1 : 0)])
    }

    static func reminderCount(_ sql: StoreConnection) throws -> Int {
        try sql.first("SELECT COUNT(*) FROM reminder", []) { $0.integer(0) }.map(Int.init) ?? 0
    }

    static func save(_ reminder: Reminder, _ sql: StoreConnection) throws {
        try sql.execute("""
            INSERT INTO reminder (id, user_id, rule, title, body, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, rule = excluded.rule, title = excluded.title, body = excluded.body,
                created_at_ms = excluded.created_at_ms
            """, [.blob(reminder.id.bytes), .text(reminder.userId.rawValue), .integer(StoredRule(reminder).bits),
                  .text(reminder.title), .text(reminder.body), .integer(reminder.createdAt.millisecondsSince1970)])
    }

    static func delete(_ reminder: Reminder, _ sql: StoreConnection) throws {
        try sql.execute("DELETE FROM reminder WHERE id = ?", [.blob(reminder.id.bytes)])
        try sql.execute("DELETE FROM announced WHERE user_id = ? AND reminder_id = ?", announcementKey(reminder))
        try sql.execute("DELETE FROM restored WHERE reminder_id = ?", [.text(reminder.id.description)])
    }

    // MARK: What covers occurrences

    /// Returns false when the session was known already (a repeated event). One of an earlier
    /// history at the same seq is replaced (`sessionsBySeq`).
    /// With it, its user's latest session end for the activity is raised (`latest_session_end`).
    static func insert(session: StoredSession, seq: Int64, _ sql: StoreConnection) throws -> Bool {
        let user = SQLValue.text(session.userId.rawValue), activity = SQLValue.text(session.activity.rawValue)
        let end = SQLValue.integer(session.end.millisecondsSince1970)
        guard try sql.execute("""
            INSERT INTO session (id, user_id, activity, start_ms, end_ms, seq) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (seq) DO UPDATE SET id = excluded.id, user_id = excluded.user_id, activity = excluded.activity,
                start_ms = excluded.start_ms, end_ms = excluded.end_ms WHERE session.id <> excluded.id
            """, [.text(session.id.description), user, activity, .integer(session.start.millisecondsSince1970), end, .integer(seq)]) > 0
        else { return false }
        try sql.execute("""
            INSERT INTO latest_session_end (user_id, activity, end_ms) VALUES (?, ?, ?)
            ON CONFLICT (user_id, activity) DO UPDATE SET end_ms = excluded.end_ms WHERE excluded.end_ms > latest_session_end.end_ms
            """, [user, activity, end])
        return true
    }

    /// Every user's latest session end by activity, for `LatestLogged` at the start. A row that does
    /// not read back is skipped: its user or activity is not one a query could ask for.
    static func forEachLatestSessionEnd(_ sql: StoreConnection, _ body: (UserID, Activity, _ endMs: Int64) -> Void) throws {
        try sql.forEachRow("SELECT user_id, activity, end_ms FROM latest_session_end", []) { row in
            guard let user = row.text(0).flatMap(UserID.init), let activity = row.text(1).flatMap(Activity.init(rawValue:)),
                  let end = row.integer(2) else { return }
            body(user, activity, end)
        }
    }

    /// Records that the day has an entry; the first entry stays the day's cause. False if known.
    static func insert(noalcDay day: LocalDay, user: UserID, entry: RecordID, _ sql: StoreConnection) throws -> Bool {
        try sql.execute("INSERT INTO noalc_day (user_id, day, entry_id) VALUES (?, ?, ?) ON CONFLICT (user_id, day) DO NOTHING",
                        [.text(user.rawValue), .text(day.description), .text(entry.description)]) > 0
    }

    /// What could cover the occurrences of `reminder` from `first` through `last` (one, or several
    /// in time order), for `Coverage.cause` to decide: it takes any superset, so one query serves
    /// them all. A few rows narrowed on an index, never all of a user's sessions or days.
    /// `latest`, where known, spares the sessions' query when every session of the activity ended
    /// before the first window opened: none can cover.
    static func coverageCandidates(of reminder: Reminder, from first: PlannedOccurrence, through last: PlannedOccurrence,
                                   latest: LatestLogged? = nil, _ sql: StoreConnection) throws -> [CoverageCandidate] {
        if reminder.activity == .noalc { return try noalcCandidates(user: reminder.userId, ruleDays: first.day...last.day, sql) }
        let windowStart = Coverage.windowStart(of: first.at, lookbackHours: reminder.lookbackHours)
        func query() throws -> [CoverageCandidate] {
            try sessionCandidates(user: reminder.userId, activity: reminder.activity, from: first.at, through: last.at,
                                  lookbackHours: reminder.lookbackHours, sql)
        }
        guard let latest, !latest.maySessionEnd(reminder.activity, atOrAfter: windowStart.millisecondsSince1970) else { return try query() }
        // Debug builds (the tests) ask all the same: every test checks `LatestLogged` too.
        assert((try? query())?.allSatisfy { if case .session(_, let end) = $0.record { end < windowStart } else { false } } ?? true,
               "LatestLogged said every session ended before the window, but a stored one did not")
        return []
    }

    /// The user's sessions of the activity that start no later than the last T and no earlier than a
    /// day before the first window opens — sessions last at most 24 h, so one starting earlier ends
    /// before the window: a range of `session_by_user_start`. `seq` (the session log's) is their logging order.
    /// The user and activity are the query's own: a row that names others does not exist.
    static func sessionCandidates(user: UserID, activity: Activity, from first: Instant, through last: Instant, lookbackHours: Int,
                                  _ sql: StoreConnection) throws -> [CoverageCandidate] {
        let windowStart = Coverage.windowStart(of: first, lookbackHours: lookbackHours)
        let earliestStart = windowStart.adding(seconds: -SessionLogRequest.longestSessionSeconds)
        return try sql.rows("""
            SELECT id, start_ms, end_ms, seq FROM session
            WHERE user_id = ? AND activity = ? AND start_ms BETWEEN ? AND ?
            """, [.text(user.rawValue), .text(activity.rawValue), .integer(earliestStart.millisecondsSince1970), .integer(last.millisecondsSince1970)]
        ) { row in
            guard let id = row.withUTF8(0, { RecordID(utf8: $0) }) ?? nil, let start = row.integer(1), let end = row.integer(2),
                  let seq = row.integer(3) else { return nil }
            return .session(id: id, userId: user, activity: activity, start: Instant(millisecondsSince1970: start),
                            end: Instant(millisecondsSince1970: end), loggedOrder: seq)
        }
    }

    /// The user's NoAlc days occurrences on rule days D can ask about — each D − 1 (morning rules)
    /// and D (evening rules): a range of the primary key. A row is the day's first entry
    /// (`insert(noalcDay:)` keeps it), and its rowid the order the planner stored it in.
    static func noalcCandidates(user: UserID, ruleDays: ClosedRange<LocalDay>, _ sql: StoreConnection) throws -> [CoverageCandidate] {
        try sql.rows("SELECT entry_id, day, rowid FROM noalc_day WHERE user_id = ? AND day BETWEEN ? AND ?",
                     [.text(user.rawValue), .text(ruleDays.lowerBound.adding(days: -1).description), .text(ruleDays.upperBound.description)]) { row in
            guard let id = row.withUTF8(0, { RecordID(utf8: $0) }) ?? nil, let day = row.text(1).flatMap(LocalDay.init),
                  let order = row.integer(2) else { return nil }
            return .noalcEntry(id: id, userId: user, day: day, loggedOrder: order)
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
    static func decideOnce(_ reminder: RecordID, _ planned: PlannedOccurrence, status: OccurrenceStatus, cause: RecordID?,
                           _ sql: StoreConnection) throws -> Bool {
        let at = planned.at.millisecondsSince1970, day = Int64(planned.day.ordinal), minute = Int64(planned.localTime.minutesSinceMidnight)
        return try sql.execute("""
            INSERT INTO decision (reminder_id, at_ms, status, cause, day, local_minute) SELECT ?, ?, ?, ?, ?, ?
            WHERE NOT EXISTS (SELECT 1 FROM decision WHERE reminder_id = ? AND at_ms BETWEEN ? AND ? AND day = ? AND local_minute = ?)
            ON CONFLICT (reminder_id, at_ms) DO NOTHING
            """, [.blob(reminder.bytes), .integer(at), .text(status.rawValue), .text(cause?.description), .integer(day), .integer(minute),
                  .blob(reminder.bytes), .integer(at - 2 * 86_400_000), .integer(at + 2 * 86_400_000), .integer(day), .integer(minute)]) > 0
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

    static func withdrawAnnouncement(_ reminder: Reminder, at: Int64, _ sql: StoreConnection) throws {
        try sql.execute("DELETE FROM announced WHERE user_id = ? AND reminder_id = ? AND at_ms = ?", announcementKey(reminder) + [.integer(at)])
    }

    /// Forgets `user`'s announcements of occurrences at or before `decidedThrough`: decided, they
    /// are never announced again, and without this they stayed until their reminder was edited.
    static func forgetAnnouncements(of user: UserID, through decidedThrough: Instant, _ sql: StoreConnection) throws {
        try sql.execute("DELETE FROM announced WHERE user_id = ? AND at_ms <= ?", [.text(user.rawValue), .integer(decidedThrough.millisecondsSince1970)])
    }

    private static func announcementKey(_ reminder: Reminder) -> [SQLValue] { [.text(reminder.userId.rawValue), .blob(reminder.id.bytes)] }

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

    // MARK: Partitions and other instances

    /// Each partition's decided-through instant, by partition.
    static func decidedThrough(_ sql: StoreConnection) throws -> [Int: Instant] {
        Dictionary(try sql.rows("SELECT partition_index, at_ms FROM decided_through", []) { row in
            guard let partition = row.integer(0), let at = row.integer(1) else { return nil }
            return (Int(partition), Instant(millisecondsSince1970: at))
        }) { first, _ in first }
    }

    /// A fresh store's partitions are decided through `now`: nothing before it is caught up on.
    static func startDecidedThrough(at now: Instant, _ sql: StoreConnection) throws {
        let rows = (0..<Ownership.partitionCount).map { "(\($0), \(now.millisecondsSince1970))" }.joined(separator: ", ")
        try sql.execute("INSERT INTO decided_through (partition_index, at_ms) VALUES \(rows) ON CONFLICT (partition_index) DO NOTHING", [])
    }

    static func setDecidedThrough(_ instant: Instant, of partitions: PartitionSet, _ sql: StoreConnection) throws {
        let only = partitions == .all ? "" : " AND partition_index IN (\(partitions.sqlList))"
        try sql.execute("UPDATE decided_through SET at_ms = ? WHERE at_ms < ?" + only,
                        [.integer(instant.millisecondsSince1970), .integer(instant.millisecondsSince1970)])
    }

    /// Records that `user`'s settings or reminders changed, at `version` (`memoryVersion`).
    static func noteChanged(_ user: UserID, version: Int64, _ sql: StoreConnection) throws {
        try sql.execute("INSERT INTO changed_user (user_id, version) VALUES (?, ?) ON CONFLICT (user_id) DO UPDATE SET version = excluded.version",
                        [.text(user.rawValue), .integer(version)])
        try setValue("memoryVersion", version, sql)
    }

    static func changedUsers(since version: Int64, _ sql: StoreConnection) throws -> [UserID] {
        try sql.rows("SELECT user_id FROM changed_user WHERE version > ?", [.integer(version)]) { $0.text(0).flatMap(UserID.init) }
    }

    static func user(_ id: UserID, _ sql: StoreConnection) throws -> UserSettings? {
        try users(sql, only: id).first
    }

    // MARK: Planner state

    static func value(_ key: String, _ sql: StoreConnection) throws -> Int64? {
        try sql.first("SELECT value FROM planner_state WHERE key = ?", [.text(key)]) { $0.integer(0) }
    }

    static func setValue(_ key: String, _ value: Int64, _ sql: StoreConnection) throws {
        try sql.execute("INSERT INTO planner_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [.text(key), .integer(value)])
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
