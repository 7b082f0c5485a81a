import CLibPQ
import Glibc
import Storage

/// libpq's pipeline mode: statements whose results nobody reads (inserts, updates, the log's head
/// moved, BEGIN) are sent without waiting, and read back together with the next statement whose
/// result is needed, or the COMMIT: a transaction costs a round trip per such statement, not one
/// per statement (docs/decisions/0023-libpq-pipeline-for-unread-statements.md).
///
/// The server runs a pipeline in order and skips the rest of it after a statement fails, up to the
/// sync that ends it; the failure is reported, with its SQLSTATE, by the call that reads the
/// pipeline back. Inside a transaction that is the same as today's: the transaction is failed and
/// can only be rolled back.
extension PostgresConnection {
    /// At most this many statements wait: the results of a longer pipeline could fill the socket's
    /// buffers while this thread still writes, and neither side would read.
    static let mostQueued = 256

    /// Runs `sql` later, with the next statement whose result is read (or `flush`), in one round
    /// trip; at once while `pipelines` is off. An error it meets is thrown by that later call.
    /// `failingOnlyWithTheTransaction`: it cannot fail on its own (`hasQueuedThatMayFailAlone`).
    public func enqueue(_ sql: String, _ parameters: [SQLValue] = [], failingOnlyWithTheTransaction: Bool = false) throws(PostgresError) {
        guard pipelines else { try command(sql, parameters); return }
        guard let connection else { throw PostgresError(.connection, "PostgreSQL connection is closed") }
        if queued == 0, PQenterPipelineMode(connection) != 1 { throw lost("cannot enter pipeline mode") }
        try send(sql, parameters)
        if !failingOnlyWithTheTransaction { queuedThatMayFailAlone += 1 }
        if queued >= Self.mostQueued { try flush() } else if sendsEachAtOnce { try sendQueued() }
    }

    /// As `enqueue`, for a statement whose answer is needed but not at once: `read` gets its rows
    /// and its count of changed rows when the pipeline is read back, in the same round trip as the
    /// statements around it (at once while `pipelines` is off). Not called if it failed or was skipped.
    public func enqueue(_ sql: String, _ parameters: [SQLValue] = [],
                        read: @escaping (_ rows: [TextRow], _ changed: Int) -> Void) throws(PostgresError) {
        guard pipelines else {
            let (rows, changed) = try run(sql, parameters) { (Self.rows(of: $0), Self.changedRows(of: $0)) }
            return read(rows, changed)
        }
        guard let connection else { throw PostgresError(.connection, "PostgreSQL connection is closed") }
        if queued == 0, PQenterPipelineMode(connection) != 1 { throw lost("cannot enter pipeline mode") }
        readers[try send(sql, parameters)] = read
        queuedThatMayFailAlone += 1
        if queued >= Self.mostQueued { try flush() } else if sendsEachAtOnce { try sendQueued() }
    }

    /// Whether statements queued by `enqueue` have not been read back yet.
    public var hasQueued: Bool { queued > 0 }

    /// Whether a queued statement that may fail on its own has not been read back yet (one queued
    /// `failingOnlyWithTheTransaction` can fail only as its whole transaction does).
    public var hasQueuedThatMayFailAlone: Bool { queuedThatMayFailAlone > 0 }

    /// Puts what is queued on its way without waiting for it: the server runs it while this thread
    /// goes on, and the next read or `flush` still reads it back. Worth a system call only where
    /// this thread has work before its next read (docs/decisions/0031-an-upstream-write-sends-its-lock-at-once.md).
    public func sendQueued() throws(PostgresError) {
        guard queued > 0, let connection else { return }
        guard PQflush(connection) == 0 else { throw lost("cannot send the pipeline") }
    }

    /// Sends what is queued and reads it back; throws the first error met.
    public func flush() throws(PostgresError) {
        guard queued > 0 else { return }
        PQclear(try sync(keepingLast: false))
    }

    /// `flush`, where a statement's error does not matter (a ROLLBACK follows); a lost connection does.
    func flushIgnoringStatementErrors() throws(PostgresError) {
        do { try flush() } catch { if error.kind == .connection { throw error } }
    }

    /// Adds `sql` to the pipeline, in pipeline mode, and returns its place in the queue.
    @discardableResult
    func send(_ sql: String, _ parameters: [SQLValue]) throws(PostgresError) -> Int {
        let name = try preparedName(sql, parameters)
        let sent = withParameters(parameters) { count, values, lengths, formats in
            name.map { PQsendQueryPrepared(connection, $0, count, values, lengths, formats, 0) }
                ?? PQsendQueryParams(connection, sql, count, nil, values, lengths, formats, 0)
        }
        guard sent == 1 else { throw lost("cannot send a statement") }
        Self.statementsInProcess.add(1, ordering: .relaxed)
        queued += 1
        return queued - 1
    }

    /// At most this many statements are kept prepared on a connection; the rest go unnamed.
    static let mostPrepared = 512

    /// The name of `sql` prepared on this connection, so the server parses and plans it once, not
    /// at every run; its Parse is queued first when it has none yet. Nil for a statement without
    /// parameters (BEGIN, COMMIT, DDL, SET) and past `mostPrepared`. A statement counts as
    /// prepared only once its Parse was read back: a pipeline that failed before it skipped it.
    private func preparedName(_ sql: String, _ parameters: [SQLValue]) throws(PostgresError) -> String? {
        guard !parameters.isEmpty else { return nil }
        if let name = prepared[sql] ?? preparing[sql] { return name }
        guard prepared.count + preparing.count < Self.mostPrepared else { return nil }
        nextPrepared += 1
        let name = "lht_\(nextPrepared)"
        guard PQsendPrepare(connection, name, sql, Int32(parameters.count), nil) == 1 else { throw lost("cannot send a statement") }
        preparing[sql] = name
        parses[queued] = (sql, name)
        queued += 1
        return name
    }

    /// Ends the pipeline with a sync, reads every queued statement's result and leaves pipeline
    /// mode. Returns the last statement's result with `keepingLast` (the caller clears it); throws
    /// the first failed statement's error, or `.connection` if the connection went meanwhile.
    func sync(keepingLast: Bool) throws(PostgresError) -> OpaquePointer? {
        let count = queued, readers = readers, parses = parses
        queued = 0
        queuedThatMayFailAlone = 0
        self.readers = [:]
        self.parses = [:]
        preparing = [:]
        roundTrips += 1
        guard PQpipelineSync(connection) == 1 else { throw lost("cannot send the pipeline") }
        var failed: OpaquePointer?, last: OpaquePointer?
        defer { PQclear(failed) }
        for index in 0..<count {
            awaitAnswer()
            guard let result = PQgetResult(connection) else { PQclear(last); throw lost("no result for a queued statement") }
            // Each statement's results end with a null result.
            while awaitAnswer(), let extra = PQgetResult(connection) { PQclear(extra) }
            let status = PQresultStatus(result)
            if failed == nil, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK, status != PGRES_PIPELINE_ABORTED {
                failed = result
                continue
            }
            if failed == nil, status != PGRES_PIPELINE_ABORTED, let read = readers[index] {
                read(Self.rows(of: result), Self.changedRows(of: result))
            }
            if status == PGRES_COMMAND_OK, let parse = parses[index] { prepared[parse.sql] = parse.name }
            if keepingLast, index == count - 1 {
                last = result
            } else {
                PQclear(result)
            }
        }
        var synced = false
        while !synced, PQstatus(connection) == CONNECTION_OK, awaitAnswer(), let result = PQgetResult(connection) {
            synced = PQresultStatus(result) == PGRES_PIPELINE_SYNC
            PQclear(result)
        }
        guard synced, PQexitPipelineMode(connection) == 1 else { PQclear(last); throw lost("the pipeline did not end") }
        if let failed {
            PQclear(last)
            throw error(failed)
        }
        return last
    }

    /// The connection is gone (or libpq refused): its transaction with it.
    func lost(_ what: String) -> PostgresError {
        let detail = connection.map { String(cString: PQerrorMessage($0)) } ?? "closed"
        return PostgresError(.connection, "PostgreSQL connection lost: \(what): \(detail.split(whereSeparator: \.isWhitespace).joined(separator: " "))")
    }
}

/// `parameters` as libpq takes them (count, values, lengths, formats), for `body` only. Text and
/// integers go in PostgreSQL's text form, which the server converts to the column's type; bytes
/// go in binary form, for `bytea`, so an envelope is sent as it is instead of escaped.
func withParameters<T>(_ parameters: [SQLValue],
                       _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, [Int32], [Int32]) -> T) -> T {
    var values: [UnsafeMutablePointer<CChar>?] = [], lengths: [Int32] = [], formats: [Int32] = []
    defer { values.forEach { free($0) } }
    for parameter in parameters {
        switch parameter {
        case .text(let text):
            values.append(strdup(text)); lengths.append(0); formats.append(0)
        case .integer(let number):
            values.append(strdup(String(number))); lengths.append(0); formats.append(0)
        case .blob(let bytes):
            let copy = malloc(max(bytes.count, 1))!
            bytes.withUnsafeBytes { if let base = $0.baseAddress { memcpy(copy, base, $0.count) } }
            values.append(copy.assumingMemoryBound(to: CChar.self)); lengths.append(Int32(bytes.count)); formats.append(1)
        case .null:
            values.append(nil); lengths.append(0); formats.append(0)
        }
    }
    return values.withUnsafeBufferPointer { values in
        values.withMemoryRebound(to: UnsafePointer<CChar>?.self) { body(Int32(parameters.count), $0.baseAddress, lengths, formats) }
    }
}

