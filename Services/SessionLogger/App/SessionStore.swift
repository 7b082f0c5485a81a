import Foundation
import LHTSchema
import ServiceHost
import Storage
import Synchronization

/// The session logger's tables: a projection of its log (`session.logged`, `noalc.logged`), which
/// holds the durable copy of every record. Instants are stored as milliseconds, days as
/// `YYYY-MM-DD` (which sorts as text), so range queries use plain indexes.
enum SessionStore {
    /// The log's file. It held the tables too, until they became the projection.
    static let sqliteMigrations = [
        Migration("sessions", sql: tables),
        .sqlite("sessions are a projection of the log", "DROP TABLE main.session; DROP TABLE main.noalc_entry"),
    ]

    static let layout = StoreLayout(sqlite: .logOnly(copiedFrom: sqliteMigrations, projection: Projection(migrations: [Migration("sessions", sql: tables)], replay: { seq, data, sql in
        switch data {
        case .sessionLogged(let session): try insert(session, seq: seq, in: sql)
        case .noalcLogged(let entry): try insert(entry, seq: seq, in: sql)
        default: break  // another type: no rows
        }
    })), postgresMigrations: [Migration("sessions", sql: tables)])

    /// The tables, in SQL both backends take (BIGINT is an integer column to SQLite).
    private static let tables = [
        """
        CREATE TABLE session (
            id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
            start_ms BIGINT NOT NULL, end_ms BIGINT NOT NULL, source TEXT,
            logged_at_ms BIGINT NOT NULL, seq BIGINT NOT NULL)
        """,
        "CREATE INDEX session_by_user_start ON session (user_id, start_ms)",
        """
        CREATE TABLE noalc_entry (
            id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, day TEXT NOT NULL, level TEXT NOT NULL,
            source TEXT, logged_at_ms BIGINT NOT NULL, seq BIGINT NOT NULL)
        """,
        "CREATE INDEX noalc_by_user_day ON noalc_entry (user_id, day, seq)",
    ]

    // MARK: Writes

    /// Stores a session and its `session.logged` event, or returns the first result for a repeated id.
    static func log(_ input: SessionLogRequest, in tx: Transaction, ids: LoggedIDs, unreadable: UnreadableRows) throws -> LogReceipt {
        let session = StoredSession(id: input.id ?? RecordID(), userId: input.userId, activity: input.activity, start: input.start,
                                    end: input.end, source: input.source, loggedAt: tx.now)
        return try logOnce(session.id, kind: "session", in: tx, ids: ids,
                           insert: { try insert(session, seq: tx.nextSeq, in: $0) },
                           logged: { try firstReceipt(input, id: session.id, in: $0, unreadable: unreadable) },
                           pending: {
                               guard case .sessionLogged(let logged) = $0 else { return nil }
                               return (logged.id, same(input, logged.userId.rawValue, logged.activity.rawValue, logged.start.millisecondsSince1970,
                                                       logged.end.millisecondsSince1970))
                           },
                           append: { try tx.append(Events.sessionLogged, userId: session.userId, activity: session.activity, data: session) })
    }

    /// Stores a record with id `id` and its event (`append`), or returns the first result for a
    /// repeated id. With tables, the row goes in first (`insert`), with the seq its event is about to
    /// get: a new id, the usual case, costs no lookup. Without (the log is all the transaction
    /// writes), `ids` says which ids may have been logged, and only those are looked up: in this
    /// transaction's events (`pending`) or the table (`logged`).
    private static func logOnce(_ id: RecordID, kind: String, in tx: Transaction, ids: LoggedIDs,
                                insert: (StoreConnection) throws -> Bool, logged: (StoreConnection) throws -> LogReceipt?,
                                pending: (EventData) -> (id: RecordID, same: Bool)?, append: () throws -> Int64) throws -> LogReceipt {
        if tx.hasTables {
            guard try insert(tx.sql) else {
                guard let first = try logged(tx.sql) else { throw conflict(kind, id) }
                return first
            }
        } else if try ids.mayContain(id), let first = try firstReceipt(id, kind: kind, in: tx, pending: pending, committed: logged) {
            return first
        }
        let seq = try append()
        if !tx.hasTables { try ids.insert(id) }
        return LogReceipt(id: id, seq: seq, duplicate: false)
    }

    /// The first receipt of `id`, which `LoggedIDs` says may have been logged, where the transaction
    /// has no tables: from an event of this transaction (`pending` says whether an event's data is
    /// such a record, and whether the same), or from the table once it holds every record committed
    /// before. Nil: a new id after all.
    private static func firstReceipt(_ id: RecordID, kind: String, in tx: Transaction, pending: (EventData) -> (id: RecordID, same: Bool)?,
                                     committed: (StoreConnection) throws -> LogReceipt?) throws -> LogReceipt? {
        for event in tx.events {
            guard let data = event.data, let logged = pending(data), logged.id == id else { continue }
            guard logged.same else { throw conflict(kind, id) }
            return LogReceipt(id: id, seq: event.seq, duplicate: true)
        }
        return try tx.readTables(committed)
    }

    private static func conflict(_ kind: String, _ id: RecordID) -> WireError {
        WireError(.conflict, "\(kind) \(id) was logged before with different content", field: "data.id")
    }

    /// The session's row, unless its id has one: whether it was inserted. Replay writes the same row.
    @discardableResult
    private static func insert(_ session: StoredSession, seq: Int64, in sql: StoreConnection) throws -> Bool {
        try sql.execute("""
            INSERT INTO session (id, user_id, activity, start_ms, end_ms, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, [.text(session.id.description), .text(session.userId.rawValue), .text(session.activity.rawValue),
                      .integer(session.start.millisecondsSince1970), .integer(session.end.millisecondsSince1970), .text(session.source),
                      .integer(session.loggedAt.millisecondsSince1970), .integer(seq)]) > 0
    }

    /// Whether a session logged before is the one `input` logs again.
    private static func same(_ input: SessionLogRequest, _ userId: String?, _ activity: String?, _ startMs: Int64?, _ endMs: Int64?) -> Bool {
        userId == input.userId.rawValue && activity == input.activity.rawValue
            && startMs == input.start.millisecondsSince1970 && endMs == input.end.millisecondsSince1970
    }

    /// The first receipt of a session id logged before, if this is the same session; nil for an id
    /// the table does not hold.
    private static func firstReceipt(_ input: SessionLogRequest, id: RecordID, in sql: StoreConnection,
                                     unreadable: UnreadableRows) throws -> LogReceipt? {
        let row = try sql.first("SELECT user_id, activity, start_ms, end_ms, seq FROM session WHERE id = ?", [.text(id.description)]) {
            (same: same(input, $0.text(0), $0.text(1), $0.integer(2), $0.integer(3)), seq: $0.integer(4))
        }
        guard let row else { return nil }
        guard row.same else { throw conflict("session", id) }
        guard let seq = row.seq else { throw unreadable.failure("session", key: id.description, reason: "seq") }
        return LogReceipt(id: id, seq: seq, duplicate: true)
    }

    /// Stores a NoAlc entry; the newest entry for a day is the day's level (a correction has a new id).
    /// A repeated id is told as for a session.
    static func log(_ input: NoAlcLogRequest, in tx: Transaction, ids: LoggedIDs, unreadable: UnreadableRows) throws -> LogReceipt {
        let entry = StoredNoAlcEntry(id: input.id ?? RecordID(), userId: input.userId, day: input.day, level: input.level,
                                     source: input.source, loggedAt: tx.now)
        return try logOnce(entry.id, kind: "NoAlc entry", in: tx, ids: ids,
                           insert: { try insert(entry, seq: tx.nextSeq, in: $0) },
                           logged: { try firstReceipt(input, id: entry.id, in: $0, unreadable: unreadable) },
                           pending: {
                               guard case .noalcLogged(let logged) = $0 else { return nil }
                               return (logged.id, same(input, logged.userId.rawValue, logged.day.description, logged.level.rawValue))
                           },
                           append: { try tx.append(Events.noalcLogged, userId: entry.userId, activity: .noalc, data: entry) })
    }

    /// The entry's row, unless its id has one: whether it was inserted. Replay writes the same row.
    @discardableResult
    private static func insert(_ entry: StoredNoAlcEntry, seq: Int64, in sql: StoreConnection) throws -> Bool {
        try sql.execute("""
            INSERT INTO noalc_entry (id, user_id, day, level, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, [.text(entry.id.description), .text(entry.userId.rawValue), .text(entry.day.description), .text(entry.level.rawValue),
                      .text(entry.source), .integer(entry.loggedAt.millisecondsSince1970), .integer(seq)]) > 0
    }

    /// Whether a NoAlc entry logged before is the one `input` logs again.
    private static func same(_ input: NoAlcLogRequest, _ userId: String?, _ day: String?, _ level: String?) -> Bool {
        userId == input.userId.rawValue && day == input.day.description && level == input.level.rawValue
    }

    /// The first receipt of a NoAlc entry id logged before, if this is the same entry; nil for an id
    /// the table does not hold.
    private static func firstReceipt(_ input: NoAlcLogRequest, id: RecordID, in sql: StoreConnection,
                                     unreadable: UnreadableRows) throws -> LogReceipt? {
        let row = try sql.first("SELECT user_id, day, level, seq FROM noalc_entry WHERE id = ?", [.text(id.description)]) {
            (same: same(input, $0.text(0), $0.text(1), $0.text(2)), seq: $0.integer(3))
        }
        guard let row else { return nil }
        guard row.same else { throw conflict("NoAlc entry", id) }
        guard let seq = row.seq else { throw unreadable.failure("noalc_entry", key: id.description, reason: "seq") }
        return LogReceipt(id: id, seq: seq, duplicate: true)
    }

    // MARK: Reads

    /// Sessions whose start lies in `[from, until)`, by start.
    /// A row that does not read back as a session is skipped (`UnreadableRows`), and the rest returned.
    static func sessions(_ query: SessionListRequest, in sql: StoreConnection, unreadable: UnreadableRows) throws -> [StoredSession] {
        var statement = "SELECT \(sessionColumns) FROM session WHERE user_id = ? AND start_ms >= ? AND start_ms < ?"
        var arguments: [SQLValue] = [.text(query.userId.rawValue), .integer(query.from.millisecondsSince1970),
                                     .integer(query.until.millisecondsSince1970)]
        if let activity = query.activity {
            statement += " AND activity = ?"
            arguments.append(.text(activity.rawValue))
        }
        return try sql.rows(statement + " ORDER BY start_ms, seq", arguments) { unreadable.read($0, table: "session", session(from:)) }
    }

    /// The newest entry of each day in `[from, until]`, by day.
    static func latestEntries(userId: UserID, from: LocalDay, until: LocalDay, in sql: StoreConnection,
                              unreadable: UnreadableRows) throws -> [StoredNoAlcEntry] {
        try sql.rows("""
            SELECT \(entryColumns) FROM noalc_entry AS e WHERE user_id = ? AND day BETWEEN ? AND ?
              AND seq = (SELECT MAX(seq) FROM noalc_entry WHERE user_id = e.user_id AND day = e.day)
            ORDER BY day
            """, [.text(userId.rawValue), .text(from.description), .text(until.description)]) {
                unreadable.read($0, table: "noalc_entry", entry(from:))
            }
    }

    /// Minutes per activity per local day (a session counts wholly on the day it starts, in the
    /// zone asked for) and the day's NoAlc level.
    static func summary(_ query: DailySummaryRequest, in sql: StoreConnection, unreadable: UnreadableRows) throws -> [DailySummaryDay] {
        // Local days are at most 14 h off UTC midnight either way, so a day's margin on each side is enough.
        let earliest = Instant(secondsSince1970: Int64(query.from.ordinal - 1) * 86_400)
        let latest = Instant(secondsSince1970: Int64(query.until.ordinal + 2) * 86_400)
        let sessions = try sessions(SessionListRequest(userId: query.userId, from: earliest, until: latest), in: sql, unreadable: unreadable)
        var milliseconds: [LocalDay: [Activity: Int64]] = [:]
        for session in sessions {
            let day = session.start.local(in: query.timeZone).day
            guard day >= query.from, day <= query.until else { continue }
            milliseconds[day, default: [:]][session.activity, default: 0] += session.end.milliseconds(since: session.start)
        }
        let entries = try latestEntries(userId: query.userId, from: query.from, until: query.until, in: sql, unreadable: unreadable)
        let levels = Dictionary(entries.map { ($0.day, $0.level) }, uniquingKeysWith: { $1 })
        return (query.from.ordinal...query.until.ordinal).map { ordinal in
            let day = LocalDay(ordinal: ordinal)
            // Rounded to the nearest minute once per day, so many short sessions do not lose time.
            func minutes(_ activity: Activity) -> Int { Int((Double(milliseconds[day]?[activity] ?? 0) / 60_000).rounded()) }
            return DailySummaryDay(day: day, mindfulnessMinutes: minutes(.mindfulness), workoutMinutes: minutes(.workout), noalc: levels[day])
        }
    }

    /// The columns `session(from:)` reads, in its order; `id` first, which names a row that cannot be read.
    private static let sessionColumns = "id, user_id, activity, start_ms, end_ms, source, logged_at_ms"

    /// A stored session, or why the row is not one (a column that does not parse).
    private static func session(from row: SQLRow) -> Result<StoredSession, UnreadableRow> {
        guard let id = row.text(0).flatMap(RecordID.init) else { return .failure("id") }
        guard let userId = row.text(1).flatMap(UserID.init) else { return .failure("user_id") }
        guard let activity = row.text(2).flatMap(Activity.init(rawValue:)), activity.isSession else { return .failure("activity") }
        guard let start = row.integer(3) else { return .failure("start_ms") }
        guard let end = row.integer(4) else { return .failure("end_ms") }
        guard let source = row.optionalText(5) else { return .failure("source") }
        guard let loggedAt = row.integer(6) else { return .failure("logged_at_ms") }
        return .success(StoredSession(id: id, userId: userId, activity: activity, start: Instant(millisecondsSince1970: start),
                                      end: Instant(millisecondsSince1970: end), source: source,
                                      loggedAt: Instant(millisecondsSince1970: loggedAt)))
    }

    /// The columns `entry(from:)` reads, in its order.
    private static let entryColumns = "id, user_id, day, level, source, logged_at_ms"

    /// A stored NoAlc entry, or why the row is not one.
    private static func entry(from row: SQLRow) -> Result<StoredNoAlcEntry, UnreadableRow> {
        guard let id = row.text(0).flatMap(RecordID.init) else { return .failure("id") }
        guard let userId = row.text(1).flatMap(UserID.init) else { return .failure("user_id") }
        guard let day = row.text(2).flatMap(LocalDay.init) else { return .failure("day") }
        guard let level = row.text(3).flatMap(NoAlcLevel.init(rawValue:)) else { return .failure("level") }
        guard let source = row.optionalText(4) else { return .failure("source") }
        guard let loggedAt = row.integer(5) else { return .failure("logged_at_ms") }
        return .success(StoredNoAlcEntry(id: id, userId: userId, day: day, level: level, source: source,
                                         loggedAt: Instant(millisecondsSince1970: loggedAt)))
    }
}
