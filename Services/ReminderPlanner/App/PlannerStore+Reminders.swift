import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// Users and reminders.
extension PlannerStore {
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
        guard try sql.execute(insertSession, sessionRow(session, seq: seq)) > 0 else { return false }
        try sql.executeLater(raiseLatestSessionEnd, latestSessionEndRow(session))
        return true
    }

    /// `insert(session:)` sent with the statements after it (`executeLater`), on a shared store:
    /// `inserted` hears whether the session was new once they went out. The latest end is not
    /// raised there: no instance reads it (`ReminderPlanner.latestLoggedIsKnown`). Its table stays
    /// until every instance runs a build that no longer writes it; a later migration drops it.
    static func insertLater(session: StoredSession, seq: Int64, _ sql: StoreConnection, inserted: @escaping (Bool) -> Void) throws {
        try sql.executeLater(insertSession, sessionRow(session, seq: seq)) { inserted($0 > 0) }
    }

    /// Expects (`StoreConnection.expectLater`) that `insertLater(session:)` stores a row anew:
    /// neither this session nor, under a renewed log identity, another at its seq is stored yet.
    static func expectNew(session: StoredSession, seq: Int64, _ sql: StoreConnection) throws {
        try sql.expectLater("NOT EXISTS (SELECT 1 FROM session WHERE seq = ? AND id = ?)", [.integer(seq), .text(session.id.description)],
                            "a session not stored yet")
    }

    private static let insertSession = """
        INSERT INTO session (id, user_id, activity, start_ms, end_ms, seq) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (seq) DO UPDATE SET id = excluded.id, user_id = excluded.user_id, activity = excluded.activity,
            start_ms = excluded.start_ms, end_ms = excluded.end_ms WHERE session.id <> excluded.id
        """

    private static let raiseLatestSessionEnd = """
        INSERT INTO latest_session_end (user_id, activity, end_ms) VALUES (?, ?, ?)
        ON CONFLICT (user_id, activity) DO UPDATE SET end_ms = excluded.end_ms WHERE excluded.end_ms > latest_session_end.end_ms
        """

    private static func sessionRow(_ session: StoredSession, seq: Int64) -> [SQLValue] {
        [.text(session.id.description), .text(session.userId.rawValue), .text(session.activity.rawValue),
         .integer(session.start.millisecondsSince1970), .integer(session.end.millisecondsSince1970), .integer(seq)]
    }

    private static func latestSessionEndRow(_ session: StoredSession) -> [SQLValue] {
        [.text(session.userId.rawValue), .text(session.activity.rawValue), .integer(session.end.millisecondsSince1970)]
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
}
