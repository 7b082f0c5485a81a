import Foundation
import GRDB
import LHTSchema
import ServiceHost
import Storage

/// The session logger's tables: a projection of its log (`session.logged`, `noalc.logged`), which
/// holds the durable copy of every record. Instants are stored as milliseconds, days as
/// `YYYY-MM-DD` (which sorts as text), so range queries use plain indexes.
enum SessionStore {
    /// The log's file. It held the tables too, until they became the projection.
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("sessions") { db in try createTables(db) }
        migrator.registerMigration("sessions are a projection of the log") { db in
            try db.execute(sql: "DROP TABLE main.session; DROP TABLE main.noalc_entry")
        }
    }

    static let projection = Projection(migrate: { migrator in
        migrator.registerMigration("sessions") { db in try createTables(db) }
    }, replay: { event, db in
        switch event.data {
        case .sessionLogged(let session): try insert(session, seq: event.seq, in: db)
        case .noalcLogged(let entry): try insert(entry, seq: event.seq, in: db)
        default: break  // another type: no rows
        }
    })

    private static func createTables(_ db: Database) throws {
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

    // MARK: Writes

    /// Stores a session and its `session.logged` event, or returns the first result for a repeated id.
    /// The row goes in first, with the seq its event is about to get: a new id, the usual case,
    /// costs no lookup.
    static func log(_ input: SessionLogRequest, in tx: Transaction, unreadable: UnreadableRows) throws -> LogReceipt {
        let session = StoredSession(id: input.id ?? RecordID(), userId: input.userId, activity: input.activity, start: input.start,
                                    end: input.end, source: input.source, loggedAt: tx.now)
        guard try insert(session, seq: tx.nextSeq, in: tx.db) else { return try repeated(input, id: session.id, in: tx, unreadable: unreadable) }
        let seq = try tx.append(Events.sessionLogged, userId: session.userId, activity: session.activity, data: session)
        return LogReceipt(id: session.id, seq: seq, duplicate: false)
    }

    /// The session's row, unless its id has one: whether it was inserted. Replay writes the same row.
    @discardableResult
    private static func insert(_ session: StoredSession, seq: Int64, in db: Database) throws -> Bool {
        try RawStatement.execute("""
            INSERT INTO session (id, user_id, activity, start_ms, end_ms, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, db, [.text(session.id.description), .text(session.userId.rawValue), .text(session.activity.rawValue),
                      .integer(session.start.millisecondsSince1970), .integer(session.end.millisecondsSince1970), .text(session.source),
                      .integer(session.loggedAt.millisecondsSince1970), .integer(seq)]) > 0
    }

    /// The first receipt of a session id logged before, if this is the same session.
    private static func repeated(_ input: SessionLogRequest, id: RecordID, in tx: Transaction, unreadable: UnreadableRows) throws -> LogReceipt {
        let row = try tx.db.fetchRow("SELECT user_id, activity, start_ms, end_ms, seq FROM session WHERE id = ?", arguments: [id.description])
        let same = row.map { text($0, "user_id") == input.userId.rawValue && text($0, "activity") == input.activity.rawValue
            && integer($0, "start_ms") == input.start.millisecondsSince1970 && integer($0, "end_ms") == input.end.millisecondsSince1970 } ?? false
        guard same else { throw WireError(.conflict, "session \(id) was logged before with different content", field: "data.id") }
        guard let seq = row.flatMap({ integer($0, "seq") }) else { throw unreadable.failure("session", key: id.description, reason: "seq") }
        return LogReceipt(id: id, seq: seq, duplicate: true)
    }

    /// Stores a NoAlc entry; the newest entry for a day is the day's level (a correction has a new id).
    /// As for a session, the row goes in first.
    static func log(_ input: NoAlcLogRequest, in tx: Transaction, unreadable: UnreadableRows) throws -> LogReceipt {
        let entry = StoredNoAlcEntry(id: input.id ?? RecordID(), userId: input.userId, day: input.day, level: input.level,
                                     source: input.source, loggedAt: tx.now)
        guard try insert(entry, seq: tx.nextSeq, in: tx.db) else { return try repeated(input, id: entry.id, in: tx, unreadable: unreadable) }
        let seq = try tx.append(Events.noalcLogged, userId: entry.userId, activity: .noalc, data: entry)
        return LogReceipt(id: entry.id, seq: seq, duplicate: false)
    }

    /// The entry's row, unless its id has one: whether it was inserted. Replay writes the same row.
    @discardableResult
    private static func insert(_ entry: StoredNoAlcEntry, seq: Int64, in db: Database) throws -> Bool {
        try RawStatement.execute("""
            INSERT INTO noalc_entry (id, user_id, day, level, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, db, [.text(entry.id.description), .text(entry.userId.rawValue), .text(entry.day.description), .text(entry.level.rawValue),
                      .text(entry.source), .integer(entry.loggedAt.millisecondsSince1970), .integer(seq)]) > 0
    }

    /// The first receipt of a NoAlc entry id logged before, if this is the same entry.
    private static func repeated(_ input: NoAlcLogRequest, id: RecordID, in tx: Transaction, unreadable: UnreadableRows) throws -> LogReceipt {
        let row = try tx.db.fetchRow("SELECT user_id, day, level, seq FROM noalc_entry WHERE id = ?", arguments: [id.description])
        let same = row.map { text($0, "user_id") == input.userId.rawValue && text($0, "day") == input.day.description
            && text($0, "level") == input.level.rawValue } ?? false
        guard same else { throw WireError(.conflict, "NoAlc entry \(id) was logged before with different content", field: "data.id") }
        guard let seq = row.flatMap({ integer($0, "seq") }) else { throw unreadable.failure("noalc_entry", key: id.description, reason: "seq") }
        return LogReceipt(id: id, seq: seq, duplicate: true)
    }

    // MARK: Reads

    /// Sessions whose start lies in `[from, until)`, by start.
    /// A row that does not read back as a session is skipped (`UnreadableRows`), and the rest returned.
    static func sessions(_ query: SessionListRequest, in db: Database, unreadable: UnreadableRows) throws -> [StoredSession] {
        var sql = "SELECT rowid AS row_id, * FROM session WHERE user_id = ? AND start_ms >= ? AND start_ms < ?"
        var arguments: StatementArguments = [query.userId.rawValue, query.from.millisecondsSince1970, query.until.millisecondsSince1970]
        if let activity = query.activity {
            sql += " AND activity = ?"
            arguments += [activity.rawValue]
        }
        return try db.fetchRows(sql + " ORDER BY start_ms, seq", arguments: arguments).compactMap { row in
            unreadable.read(row, table: "session", session(from:))
        }
    }

    /// The newest entry of each day in `[from, until]`, by day.
    static func latestEntries(userId: UserID, from: LocalDay, until: LocalDay, in db: Database,
                              unreadable: UnreadableRows) throws -> [StoredNoAlcEntry] {
        try db.fetchRows("""
            SELECT rowid AS row_id, * FROM noalc_entry AS e WHERE user_id = ? AND day BETWEEN ? AND ?
              AND seq = (SELECT MAX(seq) FROM noalc_entry WHERE user_id = e.user_id AND day = e.day)
            ORDER BY day
            """, arguments: [userId.rawValue, from.description, until.description]).compactMap { row in
                unreadable.read(row, table: "noalc_entry", entry(from:))
            }
    }

    /// Minutes per activity per local day (a session counts wholly on the day it starts, in the
    /// zone asked for) and the day's NoAlc level.
    static func summary(_ query: DailySummaryRequest, in db: Database, unreadable: UnreadableRows) throws -> [DailySummaryDay] {
        // Local days are at most 14 h off UTC midnight either way, so a day's margin on each side is enough.
        let earliest = Instant(secondsSince1970: Int64(query.from.ordinal - 1) * 86_400)
        let latest = Instant(secondsSince1970: Int64(query.until.ordinal + 2) * 86_400)
        let sessions = try sessions(SessionListRequest(userId: query.userId, from: earliest, until: latest), in: db, unreadable: unreadable)
        var milliseconds: [LocalDay: [Activity: Int64]] = [:]
        for session in sessions {
            let day = session.start.local(in: query.timeZone).day
            guard day >= query.from, day <= query.until else { continue }
            milliseconds[day, default: [:]][session.activity, default: 0] += session.end.milliseconds(since: session.start)
        }
        let entries = try latestEntries(userId: query.userId, from: query.from, until: query.until, in: db, unreadable: unreadable)
        let levels = Dictionary(entries.map { ($0.day, $0.level) }, uniquingKeysWith: { $1 })
        return (query.from.ordinal...query.until.ordinal).map { ordinal in
            let day = LocalDay(ordinal: ordinal)
            // Rounded to the nearest minute once per day, so many short sessions do not lose time.
            func minutes(_ activity: Activity) -> Int { Int((Double(milliseconds[day]?[activity] ?? 0) / 60_000).rounded()) }
            return DailySummaryDay(day: day, mindfulnessMinutes: minutes(.mindfulness), workoutMinutes: minutes(.workout), noalc: levels[day])
        }
    }

    /// A stored session, or why the row is not one (a column that does not parse).
    private static func session(from row: Row) -> Result<StoredSession, UnreadableRow> {
        guard let id = text(row, "id").flatMap(RecordID.init) else { return .failure("id") }
        guard let userId = text(row, "user_id").flatMap(UserID.init) else { return .failure("user_id") }
        guard let activity = text(row, "activity").flatMap(Activity.init(rawValue:)), activity.isSession else { return .failure("activity") }
        guard let start = integer(row, "start_ms") else { return .failure("start_ms") }
        guard let end = integer(row, "end_ms") else { return .failure("end_ms") }
        guard let loggedAt = integer(row, "logged_at_ms") else { return .failure("logged_at_ms") }
        guard let source = optionalText(row, "source") else { return .failure("source") }
        return .success(StoredSession(id: id, userId: userId, activity: activity, start: Instant(millisecondsSince1970: start),
                                      end: Instant(millisecondsSince1970: end), source: source,
                                      loggedAt: Instant(millisecondsSince1970: loggedAt)))
    }

    /// A stored NoAlc entry, or why the row is not one.
    private static func entry(from row: Row) -> Result<StoredNoAlcEntry, UnreadableRow> {
        guard let id = text(row, "id").flatMap(RecordID.init) else { return .failure("id") }
        guard let userId = text(row, "user_id").flatMap(UserID.init) else { return .failure("user_id") }
        guard let day = text(row, "day").flatMap(LocalDay.init) else { return .failure("day") }
        guard let level = text(row, "level").flatMap(NoAlcLevel.init(rawValue:)) else { return .failure("level") }
        guard let loggedAt = integer(row, "logged_at_ms") else { return .failure("logged_at_ms") }
        guard let source = optionalText(row, "source") else { return .failure("source") }
        return .success(StoredNoAlcEntry(id: id, userId: userId, day: day, level: level, source: source,
                                         loggedAt: Instant(millisecondsSince1970: loggedAt)))
    }

    // Column readers that never trap: nil for NULL, a missing column or a value of another type
    // (GRDB's typed subscripts stop the process on a value they cannot convert).
    static func text(_ row: Row, _ column: String) -> String? {
        row.hasColumn(column) ? String.fromDatabaseValue(row[column] as DatabaseValue) : nil
    }

    static func integer(_ row: Row, _ column: String) -> Int64? {
        row.hasColumn(column) ? Int64.fromDatabaseValue(row[column] as DatabaseValue) : nil
    }

    /// A nullable text column: `.some(nil)` for NULL, nil for a value that is not text.
    static func optionalText(_ row: Row, _ column: String) -> String?? {
        guard row.hasColumn(column) else { return nil }
        let value = row[column] as DatabaseValue
        if value.isNull { return .some(nil) }
        return String.fromDatabaseValue(value).map { .some($0) }
    }
}

/// Why a stored row could not be read: the first column that did not parse.
struct UnreadableRow: Error, ExpressibleByStringLiteral {
    let column: String
    init(stringLiteral column: String) { self.column = column }
}

/// Rows that do not read back as what they should be (a damaged file, a row written by hand): each
/// is skipped, so one bad row cannot take every read down; logged and counted in `health`
/// (`unreadableRows`) once per row, however often it is read.
final class UnreadableRows {
    static let counter = "unreadableRows"
    private unowned let host: ServiceHost
    private var reported: Set<String> = []

    init(host: ServiceHost) {
        self.host = host
        host.count(Self.counter, by: 0)
    }

    /// The value `parse` reads from `row`, or nil (reported) when it cannot. `row_id` names the row.
    func read<Value>(_ row: Row, table: String, _ parse: (Row) -> Result<Value, UnreadableRow>) -> Value? {
        switch parse(row) {
        case .success(let value): return value
        case .failure(let problem):
            let key = SessionStore.integer(row, "row_id").map(String.init) ?? SessionStore.text(row, "id") ?? "?"
            report(table: table, key: key, column: problem.column)
            return nil
        }
    }

    /// The error of a request that cannot go on without the row (a duplicate whose first receipt is unreadable).
    func failure(_ table: String, key: String, reason column: String) -> WireError {
        report(table: table, key: key, column: column)
        return WireError(.internal, "stored \(table) row \(key) is unreadable (\(column))")
    }

    private func report(table: String, key: String, column: String) {
        guard reported.insert("\(table)/\(key)").inserted else { return }
        host.count(Self.counter)
        host.logger.error("unreadable stored row skipped", metadata: ["table": "\(table)", "row": "\(key)", "column": "\(column)"])
    }
}
