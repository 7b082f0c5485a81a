import Foundation
import LHTSchema
import Logging
import Storage
import Synchronization

/// A service's storage in PostgreSQL, shared by every instance of the service (PROTOCOL "Cluster
/// (PostgreSQL)"): its log (`PostgresLogTables`), tables and upstream cursors in one schema named
/// after the service, which the connection's `search_path` points at.
///
/// A write transaction takes the log row's lock first (`PostgresLogTables.lockHead`) and holds it
/// to COMMIT: the instances' batches commit one at a time, in seq order, and each starts from the
/// seq the last one committed. COMMIT returns once the WAL is flushed (`synchronous_commit` is set on for
/// this session), so nothing waits after it. A lost connection fails the transaction as
/// `StoreUnavailable`, and so does every one after until a thread of its own has connected again
/// (`PostgresReconnect`): the loop never waits on a connect.
public final class PostgresStore: Store {
    /// Replaced when the log takes a new identity (`adoptIdentity`).
    public internal(set) var eventLog: EventLog
    public let durability: Durability = DurableOnCommit()
    /// How the loop waits for an answer the server is slow to give (a lock another instance holds,
    /// a slow sync): the host answers `health` meanwhile (`PostgresConnection.waitForServer`). Nil
    /// (outside the loop): libpq waits.
    public var waitAnsweringHealth: ((_ isFinished: @escaping () -> Bool) -> Void)? {
        didSet { connection?.connection.waitForServer = waitAnsweringHealth }
    }
    let logTables: PostgresLogTables
    /// A read the service makes at the start of each write transaction (the planner's memory
    /// version, `readUnderEachWriteLock`): sent after the log row's lock, in its round trip.
    private var readUnderLock: (sql: String, arguments: [SQLValue], read: (SQLRow) -> Void)?
    let logger: Logger
    private var connection: PostgresStoreConnection?
    /// Makes the next connection once one is lost, off the loop thread.
    private let reconnect: PostgresReconnect
    /// Whether the instances share the service's time-driven work by partitions (`StoreLayout.partitioned`).
    let partitioned: Bool
    let leaseKeys: LeaseKeys
    /// This instance's membership lock's key, held on its connection from its first balance on;
    /// nil again once the connection is lost.
    var member: Int64?
    public internal(set) var ownedPartitions = PartitionSet.none
    /// When the leases were last renewed (`balancePartitions` succeeded), in uptime nanoseconds.
    public internal(set) var leaseRenewedAt: UInt64?
    /// The server's WAL timeline when last connected (`checkLogAfterReconnect`).
    var timeline: Int?
    public var isShared: Bool { true }
    /// The transaction in progress, so a nested `write` joins it.
    private var current: Transaction?
    public var logLockReleased: ((_ heldNanoseconds: UInt64) -> Void)?
    /// When the server answered the transaction in progress's lock on the log row, in uptime nanoseconds.
    private var lockAnsweredAt: UInt64?
    /// Whether upstream writes are first sent whole (`expectInUpstreamWrites`).
    private var expectsInUpstreamWrites = false
    /// Whether the last upstream write sent whole ran again the usual way: the next goes that way at once.
    private var lastExpectationUnmet = false
    /// Upstream writes of every store of this process that, sent whole, ran again the usual way:
    /// for a benchmark's profile.
    public static let writesRunAgainInProcess = Atomic<Int>(0)

    /// Connects (retrying with back-off while the server cannot be reached and `keepTrying` says
    /// so), makes the schema and runs the migrations not yet run. A malformed URL, or one the
    /// server refuses for good (a wrong password, an unknown role or database), is a
    /// `StoreConfigurationError`.
    public init(url: String, service: String, migrations: [Migration], partitioned: Bool = false,
                logger: Logger, keepTrying: () -> Bool = { true }) throws {
        self.logger = logger
        self.partitioned = partitioned
        leaseKeys = LeaseKeys(service: service)
        logTables = PostgresLogTables(service: service)
        let schema = logTables.schemaName
        reconnect = PostgresReconnect { try PostgresStore.connect(url, schema: schema, partitioned: partitioned) }
        var delay = 0.25
        var connection: PostgresConnection
        while true {
            do {
                connection = try Self.connect(url, schema: logTables.schemaName, partitioned: nil)
                break
            } catch let error as PostgresError where error.kind == .connection && !Self.isRefusedForGood(error) && keepTrying() {
                logger.warning("PostgreSQL cannot be reached; trying again", metadata: ["error": "\(error)", "retryInSeconds": "\(delay)"])
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
            } catch let error as PostgresError where error.kind == .badURL || Self.isRefusedForGood(error) {
                throw StoreConfigurationError(description: error.message)
            }
        }
        let logTables = logTables
        try logTables.create(on: connection) { transaction in
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(logTables.schemaName).migration (name TEXT PRIMARY KEY)")
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(logTables.schemaName).cursor (upstream TEXT PRIMARY KEY, seq BIGINT NOT NULL, log_id TEXT)")
            try transaction.execute("""
                CREATE TABLE IF NOT EXISTS \(logTables.schemaName).partition_cursor (
                    upstream TEXT NOT NULL, partition_index INTEGER NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (upstream, partition_index))
                """)
            let done = Set(try transaction.execute("SELECT name FROM \(logTables.schemaName).migration").compactMap { $0.text(0) })
            for migration in migrations where !done.contains(migration.name) {
                try migration.run(on: PostgresStoreConnection(transaction.connection)) { try transaction.execute($0) }
                try transaction.execute("INSERT INTO \(logTables.schemaName).migration (name) VALUES ($1)", [.text(migration.name)])
            }
        }
        // Migrations may take long and wait on another instance's: the limits apply from here on.
        try Self.limit(connection, partitioned: partitioned)
        if partitioned, connection.serverVersion < Self.idleSessionTimeoutVersion {
            logger.warning("PostgreSQL before 14 has no idle_session_timeout: a paused instance keeps its partitions until it resumes or its host is cut off",
                           metadata: ["serverVersion": "\(connection.serverVersion)"])
        }
        timeline = Self.timeline(connection)
        let head = try logTables.head(on: connection)
        guard let identity = RecordID(head.identity) else { throw StorageError("the log identity \(head.identity) is not a UUID") }
        eventLog = EventLog(source: service, identity: identity, lastSeq: head.lastSeq, records: .table("\(logTables.schemaName).log", compression: nil))
        self.connection = PostgresStoreConnection(connection)
        logger.info("connected to PostgreSQL", metadata: ["schema": "\(logTables.schemaName)", "lastSeq": "\(head.lastSeq)"])
    }

    public func write<T>(now: Instant, copyOfUpstream: Bool, _ body: (Transaction) throws -> T,
                         committed: (Transaction) -> Void) throws -> T {
        if let current { return try current.isolated { try body(current) } }
        let sendWhole = copyOfUpstream && expectsInUpstreamWrites && !lastExpectationUnmet
        lastExpectationUnmet = false
        if sendWhole {
            do {
                return try attempt(now: now, copyOfUpstream: true, expecting: true, body, committed: committed)
            } catch where !(error is StoreUnavailable) {
                // Another instance wrote since this one last did, or memory was not what the
                // database holds: the usual way reads what it needs. So does the next write, once.
                lastExpectationUnmet = true
                Self.writesRunAgainInProcess.add(1, ordering: .relaxed)
                logger.debug("an upstream write sent whole runs again the usual way", metadata: ["error": "\(error)"])
            }
        }
        return try attempt(now: now, copyOfUpstream: copyOfUpstream, expecting: false, body, committed: committed)
    }

    public func expectInUpstreamWrites() -> Bool {
        expectsInUpstreamWrites = true
        return true
    }

    /// One try of `write`; `expecting`: sent whole with the COMMIT (`Transaction.expectsInsteadOfReading`).
    private func attempt<T>(now: Instant, copyOfUpstream: Bool, expecting: Bool, _ body: (Transaction) throws -> T,
                            committed: (Transaction) -> Void) throws -> T {
        defer { reportLockHold() }
        let sql = try connected()
        defer { sql.connection.sendsEachAtOnce = false }
        var transaction: Transaction?
        let result: T
        do {
            result = try sql.connection.transaction { postgres in
                // The events' base: the head as last seen where the lock's answer is not waited for.
                let baseSeq: Int64
                var awaitingBaseSeq: (() throws -> Int64)?
                if expecting {
                    // Nothing is read before the COMMIT: the server runs each statement as the body makes the next.
                    postgres.connection.sendsEachAtOnce = true
                    try logTables.lockLater(expectingLastSeq: eventLog.lastSeq, identity: eventLog.identity.description, in: postgres)
                    // Held from here: the server takes it as the body works.
                    lockAnsweredAt = DispatchTime.now().uptimeNanoseconds
                    baseSeq = eventLog.lastSeq
                } else if copyOfUpstream, readUnderLock != nil {
                    // Upstream events are read before anything is appended: the lock is answered with the
                    // body's first read, and taken while the body works out what to read.
                    let head = try lockHeadLater(postgres, sql)
                    try postgres.connection.sendQueued()
                    baseSeq = eventLog.lastSeq
                    awaitingBaseSeq = { [unowned self] in try locked(head()) }
                } else {
                    baseSeq = try locked(lockHead(postgres, sql))
                }
                let started = Transaction(.all(sql: sql), source: eventLog.source, baseSeq: baseSeq, insertRecord: logTables.insertStatement,
                                          now: now, cursorTable: "cursor")
                started.awaitingBaseSeq = awaitingBaseSeq
                started.expectsInsteadOfReading = expecting
                transaction = started
                current = started
                defer { current = nil }
                let result = try body(started)
                try started.storeRecords()
                if let last = started.events.last { try logTables.advance(to: last.seq, in: postgres) }
                return result
            }
        } catch {
            transaction?.rollBack()
            throw unavailableIfDisconnected((error as? ExpectationUnmet)?.cause ?? error)
        }
        let done = transaction!
        done.didCommit(into: eventLog)
        committed(done)
        return result
    }

    public func readUnderEachWriteLock(_ sql: String, _ arguments: [SQLValue], _ read: @escaping (SQLRow) -> Void) -> Bool {
        readUnderLock = (sql, arguments, read)
        return true
    }

    /// The log row's lock, and `readUnderLock` after it in the same round trip.
    private func lockHead(_ postgres: PostgresTransaction, _ sql: PostgresStoreConnection) throws -> (identity: String, lastSeq: Int64) {
        guard readUnderLock != nil else { return try logTables.lockHead(in: postgres) }
        return try lockHeadLater(postgres, sql)()
    }

    /// `lockHead`, queued: the returned call answers once the statements after it went out.
    private func lockHeadLater(_ postgres: PostgresTransaction, _ sql: PostgresStoreConnection) throws
        -> () throws(PostgresError) -> (identity: String, lastSeq: Int64) {
        let head = try logTables.lockHeadLater(in: postgres)
        if let readUnderLock { try sql.forEachRowLater(readUnderLock.sql, readUnderLock.arguments, readUnderLock.read) }
        return head
    }

    /// The head read with the lock, taken on: its seq is the transaction's base. Another instance
    /// found a lost tail and renewed the identity: no seq of the old one is handed out.
    private func locked(_ head: (identity: String, lastSeq: Int64)) throws -> Int64 {
        lockAnsweredAt = DispatchTime.now().uptimeNanoseconds
        if RecordID(head.identity) != eventLog.identity { try adoptIdentity(head.identity, lastSeq: head.lastSeq) }
        eventLog.committed(through: head.lastSeq)
        return head.lastSeq
    }

    /// The lock is released with the transaction's end, committed or not: seen from here, the
    /// answer to COMMIT (or ROLLBACK) came back.
    private func reportLockHold() {
        guard let answeredAt = lockAnsweredAt else { return }
        lockAnsweredAt = nil
        logLockReleased?(DispatchTime.now().uptimeNanoseconds - answeredAt)
    }

    /// Each statement sees what had committed when it started (READ COMMITTED, outside a transaction).
    public func query<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        do {
            return try body(connected())
        } catch {
            throw unavailableIfDisconnected(error)
        }
    }

    public func cursor(_ upstream: String) throws -> (seq: Int64, logId: RecordID?) {
        try query { try EventLog.cursor(upstream, table: "cursor", in: $0) }
    }

    /// The log row's seq, which every instance's commits move; this instance's published seq while
    /// the database cannot be read.
    public func newestSeq() -> Int64 {
        let head = try? query { sql in try sql.first("SELECT last_seq FROM \(logTables.schemaName).log_head WHERE service = ?", [.text(logTables.service)]) { $0.integer(0) } }
        if let head = head ?? nil, head > eventLog.lastSeq { eventLog.committed(through: head) }
        return max(eventLog.publishedSeq, (head ?? nil) ?? 0)
    }

    /// The server process of the store's connection now (what `pg_terminate_backend` takes); nil
    /// while it has none.
    public var backendPID: Int32? { connection?.connection.backendPID }

    /// The round trips to the server of the store's connection now (`PostgresConnection.roundTrips`).
    public var roundTrips: Int { connection?.connection.roundTrips ?? 0 }

    public func close() {
        reconnect.close()
        // The leases are let go of here, not when the server's process for this session has ended
        // after the close (later on a busy machine): an instance started next takes them at once.
        if partitioned, member != nil, let postgres = connection?.connection {
            postgres.waitForServer = nil
            _ = try? postgres.execute("SELECT pg_advisory_unlock_all()")
        }
        connection?.connection.close()
        connection = nil
        forgetLeases()
    }

    /// The connection; once it was lost, the one made since on a thread of its own (`PostgresReconnect`),
    /// else `StoreUnavailable` at once. A new connection is taken only once its log was checked
    /// against what this instance saw (`checkLogAfterReconnect`).
    private func connected() throws -> PostgresStoreConnection {
        if let connection { return connection }
        switch reconnect.take() {
        case .waiting(let reason):
            throw StoreUnavailable(reason: reason)
        case .connected(let connection):
            // Its check takes the log row's lock, which another instance may hold.
            connection.waitForServer = waitAnsweringHealth
            do {
                try checkLogAfterReconnect(connection)
            } catch {
                connection.close()
                throw StoreUnavailable(reason: "\(error)")
            }
            self.connection = PostgresStoreConnection(connection)
            logger.notice("connected to PostgreSQL again")
            return self.connection!
        }
    }

    /// A lost connection (the server stopped, the network went) becomes `StoreUnavailable`, and
    /// the next transaction connects again; so does a statement the server's limits ended (a lock
    /// or statement timeout: the database is busy, the request may be repeated). Any other error is
    /// the statement's own.
    private func unavailableIfDisconnected(_ error: Error) -> Error {
        guard let error = error as? PostgresError else { return error }
        if case .statement(let state) = error.kind, Self.limitStates.contains(state) {
            return StoreUnavailable(reason: error.message)
        }
        guard error.kind == .connection else { return error }
        connection?.connection.close()
        connection = nil
        forgetLeases()
        logger.warning("lost the connection to PostgreSQL", metadata: ["error": "\(error)"])
        return StoreUnavailable(reason: error.message)
    }
}
