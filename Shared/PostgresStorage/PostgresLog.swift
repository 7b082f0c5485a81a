// A service's event log in PostgreSQL, shared by all its instances (PROTOCOL.md "Cluster
// (PostgreSQL)": one log per service, gap-free seqs in commit order).
//
// Why a log row and not a sequence: a sequence hands out numbers outside the transaction, so a
// transaction that rolls back leaves a gap for good, and two transactions commit in either order
// whatever numbers they drew, so a reader at "after 4" may see 6 before 5 exists and never look
// back. Here every batch first updates its service's row in `log_head`: the row lock it takes is
// held until COMMIT or ROLLBACK, so a second batch waits in its UPDATE until the first has ended,
// then reads the committed `last_seq` (READ COMMITTED, PostgreSQL's default, re-reads a row whose
// updater committed; REPEATABLE READ would fail with 40001 instead) or the old one (the updater
// rolled back: its numbers are handed out again). The batches thus
// commit one at a time in seq order, and a reader whose snapshot shows seq n shows every seq
// below it.

/// One logged event.
public struct LogRecord: Equatable, Sendable {
    public let seq: Int64
    public let topic: String
    public let envelope: [UInt8]

    public init(seq: Int64, topic: String, envelope: [UInt8]) {
        self.seq = seq
        self.topic = topic
        self.envelope = envelope
    }
}

/// The log of one service, in a schema named after it (`session-logger` → `session_logger`).
/// Holds no connection: each call takes the connection or transaction it runs on.
public struct PostgresLog: Sendable {
    public let service: String
    /// The schema's name, quoted for SQL.
    private let schema: String

    /// `service` is the executable's name: lowercase letters, digits and `-`, starting with a letter.
    public init(service: String) {
        precondition(service.first.map { ("a"..."z").contains($0) } == true
                     && service.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" },
                     "a service name is lowercase letters, digits and -: \(service)")
        self.service = service
        schema = "\"" + String(service.map { $0 == "-" ? "_" : $0 }) + "\""
    }

    /// Makes the schema, the tables and the service's log row where missing. Several instances may
    /// start at once: `CREATE ... IF NOT EXISTS` is not safe against a concurrent identical CREATE
    /// (one of them fails on the catalog's unique index), so they take turns on an advisory lock.
    public func create(on connection: PostgresConnection) throws {
        try connection.transaction { transaction in
            try transaction.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("lht.log." + service)])
            try transaction.execute("CREATE SCHEMA IF NOT EXISTS \(schema)")
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(schema).log_head (service text PRIMARY KEY, last_seq bigint NOT NULL)")
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(schema).log (seq bigint PRIMARY KEY, topic text NOT NULL, envelope bytea NOT NULL)")
            try transaction.execute("INSERT INTO \(schema).log_head (service, last_seq) VALUES ($1, 0) ON CONFLICT (service) DO NOTHING",
                                    [.text(service)])
        }
    }

    /// Appends `records` in the caller's transaction and returns their seqs: `last_seq - n + 1` ...
    /// `last_seq` of the one UPDATE that takes the log row's lock. They become visible, all at once
    /// and after every earlier seq, when that transaction commits; if it rolls back or its
    /// connection dies, the seqs are handed out again. Nil for no records: nothing is locked.
    @discardableResult
    public func append(_ records: [(topic: String, envelope: [UInt8])], in transaction: PostgresTransaction) throws(PostgresError) -> ClosedRange<Int64>? {
        guard !records.isEmpty else { return nil }
        let count = Int64(records.count)
        let head = try transaction.execute("UPDATE \(schema).log_head SET last_seq = last_seq + $2 WHERE service = $1 RETURNING last_seq",
                                           [.text(service), .int(count)])
        guard let last = head.first?.int64(0) else {
            throw PostgresError(.statement(sqlState: "P0002"), "PostgreSQL: no log row for \(service) in \(schema).log_head (PostgresLog.create was not run)")
        }
        let first = last - count + 1
        // One INSERT of many rows, a few hundred a statement (a statement takes at most 65,535 parameters).
        var seq = first
        for chunk in stride(from: 0, to: records.count, by: 500).map({ records[$0..<min($0 + 500, records.count)] }) {
            var rows: [String] = [], parameters: [PostgresValue] = []
            for record in chunk {
                let n = parameters.count
                rows.append("($\(n + 1), $\(n + 2), $\(n + 3))")
                parameters += [.int(seq), .text(record.topic), .bytes(record.envelope)]
                seq += 1
            }
            try transaction.execute("INSERT INTO \(schema).log (seq, topic, envelope) VALUES " + rows.joined(separator: ", "), parameters)
        }
        return first...last
    }

    /// The committed records after `seq`, in seq order, at most `limit`. Since seqs commit in
    /// order, a reader that asks again from the last seq it got misses none.
    public func since(after seq: Int64, limit: Int, on connection: PostgresConnection) throws(PostgresError) -> [LogRecord] {
        try connection.execute("SELECT seq, topic, envelope FROM \(schema).log WHERE seq > $1 ORDER BY seq LIMIT $2",
                               [.int(seq), .int(Int64(limit))])
            .map { row in LogRecord(seq: row.int64(0) ?? 0, topic: row.text(1) ?? "", envelope: row.bytes(2) ?? []) }
    }
}
