import Foundation
import GRDB
import LHTSchema
import Logging
import PostgresStorage

/// A service's storage in PostgreSQL, shared by every instance of the service (PROTOCOL "Cluster
/// (PostgreSQL)"): its log (`PostgresLog`), tables and upstream cursors in one schema named after
/// the service, which the connection's `search_path` points at.
///
/// A write transaction takes the log row's lock first (`PostgresLog.lock`) and holds it to COMMIT:
/// the instances' batches commit one at a time, in seq order, and each starts from the seq the
/// last one committed. COMMIT returns once the WAL is flushed (`synchronous_commit` is set on for
/// this session), so nothing waits after it. A lost connection fails the transaction as
/// `StoreUnavailable`; the next one connects again.
public final class PostgresStore: Store {
    public let eventLog: EventLog
    public let durability: Durability = DurableOnCommit()
    /// Nothing here waits for another thread.
    public var waitWhileRewinding: ((_ isFinished: @escaping () -> Bool) -> Void)?
    private let url: String
    private let log: PostgresLog
    private let logger: Logger
    private var connection: PostgresStoreConnection?
    /// Whether the instances share the service's time-driven work by partitions (`StoreLayout.partitioned`).
    private let partitioned: Bool
    private let leaseKeys: LeaseKeys
    /// This instance's membership lock's key, held on its connection from its first balance on;
    /// nil again once the connection is lost.
    private var member: Int64?
    public private(set) var ownedPartitions = PartitionSet.none
    public var isShared: Bool { true }
    /// The transaction in progress, so a nested `write` joins it.
    private var current: Transaction?

    /// Connects (retrying with back-off while the server cannot be reached and `keepTrying` says
    /// so), makes the schema and runs the migrations not yet run. A malformed URL, or one the
    /// server refuses for good (a wrong password, an unknown role or database), is a
    /// `StoreConfigurationError`.
    public init(url: String, service: String, migrations: [PostgresMigration], partitioned: Bool = false,
                logger: Logger, keepTrying: () -> Bool = { true }) throws {
        self.url = url
        self.logger = logger
        self.partitioned = partitioned
        leaseKeys = LeaseKeys(service: service)
        log = PostgresLog(service: service)
        var delay = 0.25
        var connection: PostgresConnection
        while true {
            do {
                connection = try Self.connect(url, schema: log.schemaName)
                break
            } catch let error as PostgresError where error.kind == .connection && !Self.isRefusedForGood(error) && keepTrying() {
                logger.warning("PostgreSQL cannot be reached; trying again", metadata: ["error": "\(error)", "retryInSeconds": "\(delay)"])
                Thread.sleep(forTimeInterval: delay)
                delay = min(delay * 2, 5)
            } catch let error as PostgresError where error.kind == .badURL || Self.isRefusedForGood(error) {
                throw StoreConfigurationError(description: error.message)
            }
        }
        let log = log
        try log.create(on: connection) { transaction in
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(log.schemaName).migration (name TEXT PRIMARY KEY)")
            try transaction.execute("CREATE TABLE IF NOT EXISTS \(log.schemaName).cursor (upstream TEXT PRIMARY KEY, seq BIGINT NOT NULL, log_id TEXT)")
            try transaction.execute("""
                CREATE TABLE IF NOT EXISTS \(log.schemaName).partition_cursor (
                    upstream TEXT NOT NULL, partition_index INTEGER NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (upstream, partition_index))
                """)
            let done = Set(try transaction.execute("SELECT name FROM \(log.schemaName).migration").compactMap { $0.text(0) })
            for migration in migrations where !done.contains(migration.name) {
                for statement in migration.statements { try transaction.execute(statement) }
                try transaction.execute("INSERT INTO \(log.schemaName).migration (name) VALUES ($1)", [.text(migration.name)])
            }
        }
        let head = try log.head(on: connection)
        guard let identity = RecordID(head.identity) else { throw StorageError("the log identity \(head.identity) is not a UUID") }
        eventLog = EventLog(source: service, identity: identity, lastSeq: head.lastSeq, records: .table("\(log.schemaName).log", compression: nil))
        self.connection = PostgresStoreConnection(connection)
        logger.info("connected to PostgreSQL", metadata: ["schema": "\(log.schemaName)", "lastSeq": "\(head.lastSeq)"])
    }

    /// A connection whose statements name the service's tables without their schema, whose COMMIT
    /// returns only once durable, whatever the server's default.
    private static func connect(_ url: String, schema: String) throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url)
        try connection.execute("SET synchronous_commit = on")
        // The server drops this session within about 11 s of its client going silent (a host cut
        // off), and with it the log row's lock it may hold mid-batch, which every instance waits on.
        for setting in ["tcp_keepalives_idle = 5", "tcp_keepalives_interval = 2", "tcp_keepalives_count = 3", "tcp_user_timeout = 10000"] {
            try connection.execute("SET " + setting)
        }
        try connection.execute("SET search_path TO \(schema)")
        return connection
    }

    /// A server that answered and refused: trying again changes nothing.
    private static func isRefusedForGood(_ error: PostgresError) -> Bool {
        ["password authentication failed", "no password supplied", "does not exist", "no pg_hba.conf entry"].contains {
            error.message.contains($0)
        }
    }

    public func write<T>(now: Instant, copyOfUpstream: Bool, _ body: (Transaction) throws -> T,
                         committed: (Transaction) -> Void) throws -> T {
        if let current { return try current.isolated { try body(current) } }
        let sql = try connected()
        var transaction: Transaction?
        let result: T
        do {
            result = try sql.connection.transaction { postgres in
                let head = try log.lock(in: postgres)
                eventLog.committed(through: head)
                let started = Transaction(sql: sql, source: eventLog.source, baseSeq: head, insertRecord: log.insertStatement,
                                          now: now, cursorTable: "cursor")
                transaction = started
                current = started
                defer { current = nil }
                let result = try body(started)
                try started.storeRecords()
                if let last = started.events.last { try log.advance(to: last.seq, in: postgres) }
                return result
            }
        } catch {
            transaction?.rollBack()
            throw unavailableIfDisconnected(error)
        }
        let done = transaction!
        done.didCommit(into: eventLog)
        committed(done)
        return result
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
        let head = try? query { sql in try sql.first("SELECT last_seq FROM \(log.schemaName).log_head WHERE service = ?", [.text(log.service)]) { $0.integer(0) } }
        return max(eventLog.publishedSeq, (head ?? nil) ?? 0)
    }

    public func close() {
        connection?.connection.close()
        connection = nil
        forgetLeases()
    }

    // MARK: Partitions

    /// Leases are session advisory locks on the store's one connection, so whatever this instance
    /// commits comes from a session that holds them: a cut-off instance's session ends (about 11 s,
    /// `connect`), and its leases with it, before another instance can take them (fencing). Each
    /// instance holds a membership lock too; the members, in key order, take the shares their ranks
    /// give, and each lets go of what is no longer its share before another takes it.
    public func balancePartitions() throws -> PartitionSet {
        guard partitioned else { return .none }
        return try query { sql in
            let member = try self.member ?? join(sql)
            let members = try sql.rows("""
                SELECT objid::bigint FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = \(leaseKeys.members)::oid
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                ORDER BY objid
                """, []) { $0.integer(0) }
            guard let rank = members.firstIndex(of: member) else { throw StoreUnavailable(reason: "this instance's membership lock is gone") }
            let share = PartitionSet.share(rank: rank, of: members.count)
            let leaving = ownedPartitions.subtracting(share)
            if !leaving.isEmpty {
                _ = try sql.execute("SELECT pg_advisory_unlock(\(leaseKeys.partitions), p) FROM unnest(\(Self.array(leaving))) p", [])
                ownedPartitions = ownedPartitions.subtracting(leaving)
            }
            let wanted = share.subtracting(ownedPartitions)
            guard !wanted.isEmpty else { return .none }
            let taken = PartitionSet(try sql.rows("""
                SELECT p FROM unnest(\(Self.array(wanted))) p WHERE pg_try_advisory_lock(\(leaseKeys.partitions), p)
                """, []) { $0.integer(0).map(Int.init) })
            ownedPartitions = ownedPartitions.union(taken)
            return taken
        }
    }

    /// Takes a membership lock under a key no other member holds.
    private func join(_ sql: StoreConnection) throws -> Int64 {
        while true {
            let key = Int64.random(in: 1...Int64(Int32.max))
            if try sql.first("SELECT pg_try_advisory_lock(\(leaseKeys.members), \(key)::int)", [], { $0.text(0) }) == "t" {
                member = key
                return key
            }
        }
    }

    /// The session ended, and its locks with it.
    private func forgetLeases() {
        member = nil
        if !ownedPartitions.isEmpty { logger.warning("the partition leases went with the connection", metadata: ["partitions": "\(ownedPartitions.count)"]) }
        ownedPartitions = .none
    }

    private static func array(_ partitions: PartitionSet) -> String {
        "ARRAY[\(partitions.sqlList)]::int[]"
    }

    /// The connection, made again if the last one was lost.
    private func connected() throws -> PostgresStoreConnection {
        if let connection { return connection }
        let connection: PostgresConnection
        do {
            connection = try Self.connect(url, schema: log.schemaName)
        } catch {
            throw StoreUnavailable(reason: "\(error)")
        }
        self.connection = PostgresStoreConnection(connection)
        logger.notice("connected to PostgreSQL again")
        return self.connection!
    }

    /// A lost connection (the server stopped, the network went) becomes `StoreUnavailable`, and
    /// the next transaction connects again; any other error is the statement's own.
    private func unavailableIfDisconnected(_ error: Error) -> Error {
        guard let error = error as? PostgresError, error.kind == .connection else { return error }
        connection?.connection.close()
        connection = nil
        forgetLeases()
        logger.warning("lost the connection to PostgreSQL", metadata: ["error": "\(error)"])
        return StoreUnavailable(reason: error.message)
    }
}

/// The store cannot start as configured (a malformed URL, a wrong password): exit 2.
public struct StoreConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// The advisory-lock keys of a service's leases: one key space for its members, one for its
/// partitions (the second key is the member's or the partition's number). Both are 31-bit, so
/// `pg_locks` shows them as they are.
private struct LeaseKeys {
    let members: Int64
    let partitions: Int64

    init(service: String) {
        func key(_ name: String) -> Int64 {
            var hash: UInt32 = 0x811c_9dc5
            for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
            return Int64(hash & 0x7fff_ffff)
        }
        members = key("lht.members." + service)
        partitions = key("lht.partitions." + service)
    }
}
