// A small synchronous wrapper of libpq: one connection, owned by one thread (the service's loop
// thread owns it as it owns its ZeroMQ sockets). Statements are sent with numbered parameters
// ($1...$n) and their rows come back as text, as psql shows them. Statements whose result nobody
// reads wait in libpq's pipeline (`enqueue`, PostgresPipeline.swift) and go out with the next one
// whose result is needed (docs/decisions/0023-libpq-pipeline-for-unread-statements.md).
import CLibPQ
import Glibc
import Storage
import Synchronization

/// Why a call failed, as one line (libpq's own messages span several; a log line or a start-up
/// error should not).
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Equatable, Sendable {
        /// The URL cannot be parsed: a configuration error, not worth retrying.
        case badURL
        /// Connecting or authenticating failed, or the connection is gone (its transaction with it).
        case connection
        /// The server refused a statement; `sqlState` is its SQLSTATE code ("40001", "23505", ...).
        case statement(sqlState: String)
    }

    public let kind: Kind
    public let message: String
    public var description: String { message }

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}

/// libpq's text, which may span lines ("connection to server ... failed: FATAL:  ...\n" and a
/// tab-indented hint on the next), on one line.
private func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}

/// `strings` as a NULL-terminated array of C strings, for `body` only.
private func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return (copies.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { body($0.baseAddress!) }
}


/// One connection to PostgreSQL. Not Sendable: the thread that opened it uses it and closes it.
public final class PostgresConnection {
    var connection: OpaquePointer?
    /// Whether `enqueue` keeps statements for the next round trip (libpq's pipeline mode) or runs
    /// each at once.
    public var pipelines = true
    /// Statements sent in pipeline mode whose results are not read yet.
    var queued = 0
    /// Whether each statement queued is put on its way at once (`sendQueued`), not at the next read:
    /// a system call and a server wake-up each, worth it where the thread has work between them
    /// and nothing to read until the end (docs/decisions/0032-an-upstream-write-sent-whole-expecting-what-it-would-read.md).
    public var sendsEachAtOnce = false
    /// Of those, the ones that may fail on their own, not only with the whole transaction.
    var queuedThatMayFailAlone = 0
    /// What reads the answers of some of them, by their place in the queue (`enqueue(read:)`).
    var readers: [Int: (_ rows: [TextRow], _ changed: Int) -> Void] = [:]
    /// Statements prepared on this connection, by their text, and those whose Parse is queued.
    var prepared: [String: String] = [:], preparing: [String: String] = [:]
    var parses: [Int: (sql: String, name: String)] = [:]
    var nextPrepared = 0
    /// While set, an answer the server has not given within `patienceNanoseconds` is waited for
    /// through this, not inside libpq: the owner's thread does other work meanwhile (a service's
    /// loop answers `health` while its write waits for a lock another instance holds) and calls
    /// `isAnswered` until it says so (`PostgresWaiting.swift`).
    public var waitForServer: ((_ isAnswered: @escaping () -> Bool) -> Void)?
    /// How many times this connection waited for the server: a statement run alone, or a pipeline
    /// of queued statements read back.
    public internal(set) var roundTrips = 0 {
        didSet { Self.roundTripsInProcess.add(roundTrips - oldValue, ordering: .relaxed) }
    }
    /// `roundTrips` of every connection of this process, for a benchmark's profile.
    public static let roundTripsInProcess = Atomic<Int>(0)
    /// The statements every connection of this process sent (a Parse not counted), for the same:
    /// the server binds and executes each, however few round trips carry them.
    public static let statementsInProcess = Atomic<Int>(0)

    /// Connects with a URL as libpq reads it (`postgresql://user[:password]@host[:port]/dbname[?...]`;
    /// the `PG*` variables and `~/.pgpass` apply). Blocks until connected or failed.
    public init(url: String) throws(PostgresError) {
        // A URL, not libpq's other form ("host=... dbname=..."): the contract's `--database` is one.
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
            throw PostgresError(.badURL, "invalid PostgreSQL URL: expected postgresql://user[:password]@host[:port]/dbname")
        }
        // Parsing first tells a malformed URL (a start-up error) from a server that is not there
        // (worth retrying). libpq's parse errors quote the bad part, never the whole URL.
        var parseError: UnsafeMutablePointer<CChar>?
        if let options = PQconninfoParse(url, &parseError) {
            PQconninfoFree(options)
        } else {
            let detail = parseError.map { String(cString: $0) } ?? "out of memory"
            PQfreemem(parseError)
            throw PostgresError(.badURL, "invalid PostgreSQL URL: \(oneLine(detail))")
        }
        // A host that does not answer must not hold the caller's thread for minutes: connecting
        // gives up after 5 s, and on a connection whose peer went silent (a host cut off) a query
        // fails once its bytes have gone unacknowledged for 10 s, or keepalives went unanswered
        // for 11 s while waiting for a reply. The URL may say otherwise: libpq keeps the last value
        // of a repeated keyword, and the URL comes last.
        let defaults = ["connect_timeout": "5", "tcp_user_timeout": "10000", "keepalives_idle": "5",
                        "keepalives_interval": "2", "keepalives_count": "3"]
        let keywords = Array(defaults.keys) + ["dbname"], values = keywords.dropLast().map { defaults[$0]! } + [url]
        let connection = withCStrings(keywords) { keywords in
            withCStrings(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            // libpq names the host and port and the server's reason, never the password.
            let detail = connection.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(connection)
            throw PostgresError(.connection, "cannot connect to PostgreSQL: \(oneLine(detail))")
        }
        // Notices ("schema ... already exists, skipping") would go to stderr; nothing here needs them.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        self.connection = connection
    }

    /// The server's version as a number (`140005` for 14.5), as `server_version_num` shows it.
    public var serverVersion: Int { connection.map { Int(PQserverVersion($0)) } ?? 0 }

    /// The server process behind this connection (what `pg_terminate_backend` takes).
    public var backendPID: Int32 { connection.map { PQbackendPID($0) } ?? 0 }

    /// Runs one statement and returns its rows (none for a command).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgresError) -> [TextRow] {
        try run(sql, parameters, Self.rows(of:))
    }

    static func rows(of result: OpaquePointer?) -> [TextRow] {
        let rows = PQntuples(result), columns = PQnfields(result)
        return (0..<rows).map { row in
            TextRow(columns: (0..<columns).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            })
        }
    }

    static func changedRows(of result: OpaquePointer?) -> Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    /// Runs one statement that returns no rows, and returns how many rows it changed.
    @discardableResult
    public func command(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgresError) -> Int {
        try run(sql, parameters, Self.changedRows(of:))
    }

    /// Sends `sql` with `parameters` and gives the successful result to `read`. Statements queued
    /// before go out with it, in one round trip; if one of them failed, its error is thrown and
    /// this statement did not run (the server skips the rest of a pipeline after an error). A
    /// ROLLBACK is never skipped so: the queue is read back first, its errors are what it undoes.
    func run<T>(_ sql: String, _ parameters: [SQLValue], _ read: (OpaquePointer?) -> T) throws(PostgresError) -> T {
        guard let connection else { throw PostgresError(.connection, "PostgreSQL connection is closed") }
        if queued > 0, sql.hasPrefix("ROLLBACK") { try flushIgnoringStatementErrors() }
        let result: OpaquePointer?
        if queued > 0 || waitForServer != nil {
            // Sent without waiting, as a pipeline of one, so its answer can be waited for outside libpq.
            if queued == 0, PQenterPipelineMode(connection) != 1 { throw lost("cannot enter pipeline mode") }
            try send(sql, parameters)
            result = try sync(keepingLast: true)
        } else {
            result = withParameters(parameters) { count, values, lengths, formats in
                PQexecParams(connection, sql, count, nil, values, lengths, formats, 0)
            }
            roundTrips += 1
            Self.statementsInProcess.add(1, ordering: .relaxed)
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
            break
        default:
            throw error(result)
        }
        return read(result)
    }

    /// What went wrong with `result`: the server's message and SQLSTATE, or a lost connection.
    func error(_ result: OpaquePointer?) -> PostgresError {
        if PQstatus(connection) != CONNECTION_OK {
            // A terminated backend sends FATAL and closes: whatever it said, the connection is gone.
            return PostgresError(.connection, "PostgreSQL connection lost: \(oneLine(String(cString: PQerrorMessage(connection))))")
        }
        let field = { (code: Character) in
            PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
        }
        let state = field("C") ?? ""
        let message = field("M") ?? String(cString: PQerrorMessage(connection))
        return PostgresError(.statement(sqlState: state), "PostgreSQL: \(oneLine(message)) (SQLSTATE \(state))")
    }

    /// A statement of the open transaction failed: it can only be rolled back.
    var inFailedTransaction: Bool { connection.map { PQtransactionStatus($0) == PQTRANS_INERROR } ?? false }

    /// A transaction is open (failed or not), as of the last result read.
    var inTransaction: Bool { connection.map { [PQTRANS_INTRANS, PQTRANS_INERROR].contains(PQtransactionStatus($0)) } ?? false }

    /// BEGIN: the statements until `commit()` or `rollback()` are one transaction. Queued: it goes
    /// out with the transaction's first statement.
    public func begin() throws(PostgresError) -> PostgresTransaction {
        try enqueue("BEGIN")
        return PostgresTransaction(connection: self)
    }

    /// Runs `body` in a transaction: committed if it returns, rolled back if it throws.
    public func transaction<T>(_ body: (PostgresTransaction) throws -> T) throws -> T {
        let transaction = try begin()
        let value: T
        do {
            value = try body(transaction)
        } catch {
            // The connection may be gone too; the error that matters is the body's.
            try? transaction.rollback()
            throw error
        }
        try transaction.commit()
        return value
    }

    /// Closes the connection; a transaction still open is rolled back by the server.
    public func close() {
        PQfinish(connection)
        connection = nil
    }

    deinit { close() }
}

/// A transaction on one connection, from `begin()` to `commit()` or `rollback()`: what a call that
/// must run inside the caller's transaction (`PostgresLogTables.lock`) takes.
public struct PostgresTransaction {
    public let connection: PostgresConnection

    @discardableResult
    public func execute(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgresError) -> [TextRow] {
        try connection.execute(sql, parameters)
    }

    /// As `execute`, for a statement whose result nobody reads: it may wait in the pipeline for
    /// the next statement whose result is needed, or the commit (`PostgresConnection.enqueue`).
    public func enqueue(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgresError) {
        try connection.enqueue(sql, parameters)
    }

    /// Returns once the server has committed (and, with `synchronous_commit = on`, flushed the WAL).
    /// The statements queued go out with the COMMIT; if one of them failed, its error is thrown and
    /// the transaction is rolled back.
    public func commit() throws(PostgresError) {
        // COMMIT of a transaction in which a statement failed answers "ROLLBACK", not an error: a
        // caller who committed must hear that nothing was.
        if connection.queued == 0, connection.inFailedTransaction {
            try rollback()
            throw PostgresError(.statement(sqlState: "25P02"), "PostgreSQL: not committed: a statement of the transaction had failed")
        }
        do {
            try connection.execute("COMMIT")
        } catch {
            // A queued statement failed, so the server skipped the COMMIT: the transaction is still open.
            if error.kind != .connection, connection.inTransaction { try? rollback() }
            throw error
        }
    }

    public func rollback() throws(PostgresError) { try connection.execute("ROLLBACK") }
}
