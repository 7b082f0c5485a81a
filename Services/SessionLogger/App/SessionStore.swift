import Foundation
import GRDB
import LHTSchema
import ServiceHost

/// The session logger's tables. Instants are stored as milliseconds, days as `YYYY-MM-DD`
/// (which sorts as text), so range queries use plain indexes.
enum SessionStore {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("sessions") { db in
            try db.execute(sql: """
                CREATE TABLE session (
                    id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, source TEXT,
                    logged_at_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX session_by_user_start ON session (user_id, start_ms);
                CREATE TABLE noalc_entry (
                    id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, day TEXT NOT NULL, level TEXT NOT NULL,
                    source TEXT, logged_at_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX noalc_by_user_day ON noalc_entry (user_id, day, seq);
                """)
        }
    }

    // MARK: Writes

    /// Stores a session and its `session.logged` event, or returns the first result for a repeated id.
    static func log(_ input: SessionLogRequest, in tx: Transaction) throws -> LogReceipt {
        let id = input.id ?? RecordID()
        if let row = try tx.db.fetchRow("SELECT user_id, activity, start_ms, end_ms, seq FROM session WHERE id = ?",
                                      arguments: [id.description]) {
            let same = row["user_id"] == input.userId.rawValue && row["activity"] == input.activity.rawValue
                && row["start_ms"] == input.start.millisecondsSince1970 && row["end_ms"] == input.end.millisecondsSince1970
            guard same else { throw WireError(.conflict, "session \(id) was logged before with different content", field: "data.id") }
            return LogReceipt(id: id, seq: row["seq"], duplicate: true)
        }
        let session = StoredSession(id: id, userId: input.userId, activity: input.activity, start: input.start,
                                    end: input.end, source: input.source, loggedAt: tx.now)
        let seq = try tx.append(Events.sessionLogged, userId: session.userId, activity: session.activity, data: session)
        try tx.db.run("""
            INSERT INTO session (id, user_id, activity, start_ms, end_ms, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [id.description, session.userId.rawValue, session.activity.rawValue, session.start.millisecondsSince1970,
                             session.end.millisecondsSince1970, session.source, session.loggedAt.millisecondsSince1970, seq])
        return LogReceipt(id: id, seq: seq, duplicate: false)
    }

    /// Stores a NoAlc entry; the newest entry for a day is the day's level (a correction has a new id).
    static func log(_ input: NoAlcLogRequest, in tx: Transaction) throws -> LogReceipt {
        let id = input.id ?? RecordID()
        if let row = try tx.db.fetchRow("SELECT user_id, day, level, seq FROM noalc_entry WHERE id = ?",
                                      arguments: [id.description]) {
            let same = row["user_id"] == input.userId.rawValue && row["day"] == input.day.description
                && row["level"] == input.level.rawValue
            guard same else { throw WireError(.conflict, "NoAlc entry \(id) was logged before with different content", field: "data.id") }
            return LogReceipt(id: id, seq: row["seq"], duplicate: true)
        }
        let entry = StoredNoAlcEntry(id: id, userId: input.userId, day: input.day, level: input.level, source: input.source, loggedAt: tx.now)
        let seq = try tx.append(Events.noalcLogged, userId: entry.userId, activity: .noalc, data: entry)
        try tx.db.run("""
            INSERT INTO noalc_entry (id, user_id, day, level, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [id.description, entry.userId.rawValue, entry.day.description, entry.level.rawValue,
                             entry.source, entry.loggedAt.millisecondsSince1970, seq])
        return LogReceipt(id: id, seq: seq, duplicate: false)
    }

    // MARK: Reads

    /// Sessions whose start lies in `[from, until)`, by start.
    static func sessions(_ query: SessionListRequest, in db: Database) throws -> [StoredSession] {
        var sql = "SELECT * FROM session WHERE user_id = ? AND start_ms >= ? AND start_ms < ?"
        var arguments: StatementArguments = [query.userId.rawValue, query.from.millisecondsSince1970, query.until.millisecondsSince1970]
        if let activity = query.activity {
            sql += " AND activity = ?"
            arguments += [activity.rawValue]
        }
        return try db.fetchRows(sql + " ORDER BY start_ms, seq", arguments: arguments).map(session(from:))
    }

    /// The newest entry of each day in `[from, until]`, by day.
    static func latestEntries(userId: UserID, from: LocalDay, until: LocalDay, in db: Database) throws -> [StoredNoAlcEntry] {
        try db.fetchRows("""
            SELECT * FROM noalc_entry AS e WHERE user_id = ? AND day BETWEEN ? AND ?
              AND seq = (SELECT MAX(seq) FROM noalc_entry WHERE user_id = e.user_id AND day = e.day)
            ORDER BY day
            """, arguments: [userId.rawValue, from.description, until.description]).map(entry(from:))
    }

    /// Minutes per activity per local day (a session counts wholly on the day it starts, in the
    /// zone asked for) and the day's NoAlc level.
    static func summary(_ query: DailySummaryRequest, in db: Database) throws -> [DailySummaryDay] {
        // Local days are at most 14 h off UTC midnight either way, so a day's margin on each side is enough.
        let earliest = Instant(secondsSince1970: Int64(query.from.ordinal - 1) * 86_400)
        let latest = Instant(secondsSince1970: Int64(query.until.ordinal + 2) * 86_400)
        let sessions = try sessions(SessionListRequest(userId: query.userId, from: earliest, until: latest), in: db)
        var milliseconds: [LocalDay: [Activity: Int64]] = [:]
        for session in sessions {
            let day = session.start.local(in: query.timeZone.timeZone).day
            guard day >= query.from, day <= query.until else { continue }
            milliseconds[day, default: [:]][session.activity, default: 0] += session.end.milliseconds(since: session.start)
        }
        let levels = Dictionary(uniqueKeysWithValues: try latestEntries(userId: query.userId, from: query.from, until: query.until, in: db)
            .map { ($0.day, $0.level) })
        return (query.from.ordinal...query.until.ordinal).map { ordinal in
            let day = LocalDay(ordinal: ordinal)
            // Rounded to the nearest minute once per day, so many short sessions do not lose time.
            func minutes(_ activity: Activity) -> Int { Int((Double(milliseconds[day]?[activity] ?? 0) / 60_000).rounded()) }
            return DailySummaryDay(day: day, mindfulnessMinutes: minutes(.mindfulness), workoutMinutes: minutes(.workout), noalc: levels[day])
        }
    }

    private static func session(from row: Row) -> StoredSession {
        StoredSession(id: RecordID(row["id"] as String)!, userId: UserID(row["user_id"] as String)!,
                      activity: Activity(rawValue: row["activity"])!, start: Instant(millisecondsSince1970: row["start_ms"]),
                      end: Instant(millisecondsSince1970: row["end_ms"]), source: row["source"],
                      loggedAt: Instant(millisecondsSince1970: row["logged_at_ms"]))
    }

    private static func entry(from row: Row) -> StoredNoAlcEntry {
        StoredNoAlcEntry(id: RecordID(row["id"] as String)!, userId: UserID(row["user_id"] as String)!,
                         day: LocalDay(row["day"] as String)!, level: NoAlcLevel(rawValue: row["level"])!,
                         source: row["source"], loggedAt: Instant(millisecondsSince1970: row["logged_at_ms"]))
    }
}
