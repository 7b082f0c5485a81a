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

import Foundation
import Storage

/// The SQL of one service's log tables and row, in a schema named after it (`session-logger` →
/// `session_logger`), which `PostgresStore` runs. Holds no connection: each call takes the
/// connection or transaction it runs on. The store's `EventLog` (the core's) is what every
/// backend's log answers, seqs and `events.since`.
public struct PostgresLogTables: Sendable {
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

    /// The schema's name as SQL names it (`"session_logger"`).
    public var schemaName: String { schema }

    /// Makes the schema, the tables and the service's log row where missing, and runs `more` (the
    /// service's own tables) in the same transaction. Several instances may start at once:
    /// `CREATE ... IF NOT EXISTS` is not safe against a concurrent identical CREATE (one of them
    /// fails on the catalog's unique index), so they take turns on an advisory lock.
    public func create(on connection: PostgresConnection, _ more: (PostgresTransaction) throws -> Void = { _ in }) throws {
        try connection.transaction { transaction in
            try transaction.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("lht.log." + service)])
            try transaction.execute("CREATE SCHEMA IF NOT EXISTS \(schema)")
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(schema).log_head (service text PRIMARY KEY, last_seq bigint NOT NULL)")
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(schema).log (seq bigint PRIMARY KEY, topic text NOT NULL, envelope bytea NOT NULL)")
            // The log's identity (`logId`, docs/protocol-additions.md): made with the log, the same for every instance.
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(schema).log_identity (id text NOT NULL)")
            // A UUID, as a `RecordID` is (gen_random_uuid is built in from PostgreSQL 13).
            try transaction.execute("INSERT INTO \(schema).log_identity (id) SELECT gen_random_uuid()::text WHERE NOT EXISTS (SELECT 1 FROM \(schema).log_identity)")
            try transaction.execute("INSERT INTO \(schema).log_head (service, last_seq) VALUES ($1, 0) ON CONFLICT (service) DO NOTHING",
                                    [.text(service)])
            // What a write that expects instead of reading checks (`StoreConnection.expectLater`):
            // it fails its transaction, with its own SQLSTATE, unless `ok` is true.
            try transaction.execute("""
                CREATE OR REPLACE FUNCTION \(schema).lht_expect(ok boolean, what text) RETURNS boolean LANGUAGE plpgsql AS $$
                BEGIN
                    IF ok IS NOT TRUE THEN RAISE EXCEPTION 'expected %', what USING ERRCODE = '\(Self.unmetExpectationState)'; END IF;
                    RETURN true;
                END $$
                """)
            try more(transaction)
        }
    }

    /// The log's identity and its newest committed seq.
    public func head(on connection: PostgresConnection) throws(PostgresError) -> (identity: String, lastSeq: Int64) {
        let row = try connection.execute("SELECT (SELECT id FROM \(schema).log_identity), last_seq FROM \(schema).log_head WHERE service = $1",
                                         [.text(service)]).first
        guard let identity = row?.text(0), let last = row?.int64(1) else { throw Self.missingRow(service, schema) }
        return (identity, last)
    }

    /// Takes the log row's lock for the rest of the caller's transaction and returns the newest
    /// committed seq: the batch's events get the seqs after it. A batch that waited here reads the
    /// seq its predecessor committed (READ COMMITTED re-reads a locked row once it is free).
    /// Taken at the start of the transaction, never inside a savepoint: rolling one back would
    /// release the lock and let another batch take the same seqs.
    public func lock(in transaction: PostgresTransaction) throws(PostgresError) -> Int64 {
        guard let last = try transaction.execute("SELECT last_seq FROM \(schema).log_head WHERE service = $1 FOR UPDATE",
                                                 [.text(service)]).first?.int64(0)
        else { throw Self.missingRow(service, schema) }
        return last
    }

    /// `lock`, and the log's identity as of the lock: the identity row is locked too, so an
    /// identity that a batch before renewed (`renewIdentity`) is the one read here.
    public func lockHead(in transaction: PostgresTransaction) throws(PostgresError) -> (identity: String, lastSeq: Int64) {
        try head(from: transaction.execute(lockHeadStatement, [.text(service)]).first)
    }

    /// `lockHead`, queued: it goes out with the statements queued after it, and the returned call
    /// gives its answer, sending what is queued first if it has not gone out yet.
    public func lockHeadLater(in transaction: PostgresTransaction) throws(PostgresError) -> () throws(PostgresError) -> (identity: String, lastSeq: Int64) {
        var row: TextRow??
        try transaction.connection.enqueue(lockHeadStatement, [.text(service)]) { rows, _ in row = .some(rows.first) }
        return { () throws(PostgresError) in
            if row == nil { try transaction.connection.flush() }
            guard let row else { throw PostgresError(.connection, "PostgreSQL: the log row's lock was not read back") }
            return try head(from: row)
        }
    }

    /// The SQLSTATE of an expectation the database did not meet (`lht_expect`).
    public static let unmetExpectationState = "LH001"

    /// Takes the log row's lock, queued, its answer not read, expecting the head to be `lastSeq` of
    /// `identity`, as this instance saw it last: for a transaction that numbers its events from
    /// there without waiting (`Transaction.expectsInsteadOfReading`). One statement, the lock's
    /// inside the expectation, whose `lht_expect` fails the transaction that another instance's
    /// commit overtook (and one with no log row: the subquery is then null).
    public func lockLater(expectingLastSeq lastSeq: Int64, identity: String, in transaction: PostgresTransaction) throws(PostgresError) {
        try transaction.connection.enqueue(
            "SELECT \(schema).lht_expect((\(lockHeadStatement(reading: "h.last_seq = $2 AND lower(i.id) = $3"))), $4)",
            [.text(service), .integer(lastSeq), .text(identity), .text("the log head this instance saw last")],
            failingOnlyWithTheTransaction: true)
    }

    private var lockHeadStatement: String { lockHeadStatement(reading: "h.last_seq, i.id") }

    private func lockHeadStatement(reading columns: String) -> String {
        "SELECT \(columns) FROM \(schema).log_head h, \(schema).log_identity i WHERE h.service = $1 FOR UPDATE OF h, i"
    }

    private func head(from row: TextRow?) throws(PostgresError) -> (identity: String, lastSeq: Int64) {
        guard let last = row?.int64(0), let identity = row?.text(1) else { throw Self.missingRow(service, schema) }
        return (identity, last)
    }

    /// Gives the log a new identity, unless it is no longer `old` (another instance renewed it):
    /// the seqs after the log's head then mean new events, which a reader of the old identity must
    /// not take for the ones it had. Returns the identity now. Takes the log row's lock.
    public func renewIdentity(replacing old: String, in transaction: PostgresTransaction) throws(PostgresError) -> String {
        let current = try lockHead(in: transaction).identity
        guard current == old else { return current }
        return try transaction.execute("UPDATE \(schema).log_identity SET id = gen_random_uuid()::text RETURNING id").first?.text(0) ?? current
    }

    /// The statement that stores one record (seq, topic, envelope) under the lock, with `?`
    /// placeholders (`PostgresStoreConnection` numbers them): a write extends it by more rows.
    public var insertStatement: String { "INSERT INTO \(schema).log (seq, topic, envelope) VALUES (?, ?, ?)" }

    /// Moves the log row to `lastSeq`, the newest seq the locked batch stored. Queued, to go out
    /// with the COMMIT.
    public func advance(to lastSeq: Int64, in transaction: PostgresTransaction) throws(PostgresError) {
        try transaction.enqueue("UPDATE \(schema).log_head SET last_seq = $2 WHERE service = $1", [.text(service), .integer(lastSeq)])
    }

    private static func missingRow(_ service: String, _ schema: String) -> PostgresError {
        PostgresError(.statement(sqlState: "P0002"), "PostgreSQL: no log row for \(service) in \(schema).log_head (PostgresLogTables.create was not run)")
    }
}
