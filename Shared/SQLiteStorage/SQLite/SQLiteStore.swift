import Foundation
import GRDB
import LHTSchema
import Logging
import Storage

/// A service's storage, in the terms every backend keeps (docs/storage.md):
/// - **the log**: each event the service publishes is a record with a gap-free, commit-ordered
///   `seq`, stored in the transaction that caused it (`Transaction.append`); a reply or event that
///   depends on a commit leaves once it is on disk (`CommitSync`);
/// - **durable tables** beside the log, written in the same transactions (`migrations`);
/// - **projections**: tables derived from the log alone (`Projection`), kept less durably because
///   they can be rebuilt from it;
/// - **upstream cursors**, stored with the state they produced (`Transaction.setCursor`).
///
/// This is the embedded backend: SQLite files in the service's data directory, written by one
/// connection that the service's loop owns.
public final class SQLiteStore: Store {
    /// The page size of a new database file.
    public static let pageSize = 1024
    /// The writer's page cache, per file: SQLite's default. A commit after a b-tree split that swapped
    /// two pages' numbers walks the whole cache, so a larger one costs every such commit
    /// (docs/decisions/0004-sqlite-page-cache-size.md).
    static let cacheKilobytes = 2 << 10
    public let path: String
    public let database: DatabaseQueue
    public let eventLog: EventLog
    /// Syncs commits; replies and events wait in it for the sync that covers them.
    public let commits: CommitSync
    public var durability: Durability { commits }
    private let checkpointer: WALCheckpointer
    private let projection: ProjectionFile?
    /// Tables applied from each commit's events on a thread of their own (`TablesBehindTheLog`).
    private let behindTheLog: ProjectionBehindTheLog?
    /// The last seq whose rows are in the tables behind the log; nil where there are none.
    var appliedBehindTheLog: Int64? { behindTheLog?.applier.appliedSeq }
    /// The transaction in progress, so a nested `write` joins it instead of deadlocking.
    private var current: Transaction?
    /// The checkpointer copies the log back before it rewinds, and the writer waits meanwhile.
    public var waitAnsweringHealth: ((_ isFinished: @escaping () -> Bool) -> Void)?
    /// Never called: no other instance waits on this store's writes.
    public var logLockReleased: ((_ heldNanoseconds: UInt64) -> Void)?

    public init(directory: URL, name: String, migrations: [Migration], projection: Projection? = nil,
                behindTheLog: TablesBehindTheLog? = nil,
                logger: Logger, walLimit: Int64 = WALCheckpointer.defaultLimit, bootID: String = BootID.current) throws {
        _ = SQLiteProcess.configured
        path = directory.appendingPathComponent("\(name).sqlite").path
        let projection = try projection.map {
            try ProjectionFile(path: directory.appendingPathComponent("\(name).projection.sqlite").path, projection: $0, bootID: bootID, logger: logger)
        }
        self.projection = projection
        let projectionPath = projection?.path
        var configuration = Configuration()
        // The checkpointer's connection can hold a lock for a moment: wait, do not fail.
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // WAL, so readers never block the writer; synchronous=NORMAL, since `CommitSync` syncs the log
            // before anything that depends on a commit leaves (an ack still means "on disk"). Checkpoints
            // are not this connection's job (see WALCheckpointer).
            // A commit writes every page it touched to the log: small pages (for a new file; an existing
            // one keeps its size) write less of it for a commit of a few rows.
            try db.execute(sql: """
                PRAGMA page_size = \(Self.pageSize); PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
                PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = \(walLimit); PRAGMA cache_size = -\(Self.cacheKilobytes)
                """)
            if let projectionPath { try ProjectionFile.attach(projectionPath, to: db) }
        }
        try DataDirectory.createPrivateFile(path)
        database = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.register(EventLog.sqliteMigrations)
        migrator.register(migrations)
        // An older build would misread what a newer one stored (compressed envelopes, for one). The log
        // file's own record of its migrations: GRDB's checks read the unqualified table, which on a fresh
        // file is the attached projection's.
        let applied = try database.read { db in
            try db.tableExists("grdb_migrations", in: "main") ? try String.fetchAll(db, sql: "SELECT identifier FROM main.grdb_migrations") : []
        }
        guard Set(applied).isSubset(of: migrator.migrations) else {
            throw StorageError("\(path) was written by a newer build of this service (it records migrations this build does not know): run that build or a newer one")
        }
        let upgrading = !applied.isEmpty && !Set(migrator.migrations).isSubset(of: applied)
        try migrator.migrate(database)
        if upgrading { try Self.reclaimFreePages(database, logger: logger) }
        eventLog = try EventLog(source: name, database: database)
        try projection?.catchUp(database, log: eventLog)
        let (log, logDatabase) = (eventLog, database)
        self.behindTheLog = try behindTheLog.map {
            try ProjectionBehindTheLog(path: directory.appendingPathComponent("\(name).\($0.file).sqlite").path, projection: $0.projection,
                                       log: log, logDatabase: logDatabase, bootID: bootID, logger: logger)
        }
        // The migrations committed without a sync (synchronous=NORMAL): the log's identity, for one,
        // must be on disk before `health` announces it.
        commits = CommitSync(databasePath: path, logger: logger)
        commits.didCommit()
        checkpointer = try WALCheckpointer(path: path, limit: walLimit)
    }

    /// A migration that rebuilds a table leaves the old one's pages free, and SQLite keeps them in
    /// the file, as many as the old table had. So a start that migrated rewrites the file once, as a step of its own after the
    /// migrations, and truncates the WAL that rewrite filled.
    static func reclaimFreePages(_ database: DatabaseQueue, logger: Logger) throws {
        let pageSize = try database.read { try Int.fetchOne($0, sql: "PRAGMA page_size") ?? 0 }
        func pages(_ pragma: String) throws -> Int { try database.read { try Int.fetchOne($0, sql: "PRAGMA main.\(pragma)") ?? 0 } }
        let free = try pages("freelist_count"), before = try pages("page_count")
        guard free > 0 else { return }
        try database.vacuum()
        try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA main.wal_checkpoint(TRUNCATE)") }
        let after = try pages("page_count")
        logger.info("reclaimed the pages a migration freed", metadata: ["bytesBefore": "\(before * pageSize)", "bytesAfter": "\(after * pageSize)"])
    }

    /// A transaction that changed nothing (a batch of reads) asks for no sync. Nor does one with
    /// `copyOfUpstream` that appends no events: it only applied an upstream's events and moved its
    /// cursor, which a machine that goes down loses together and fetches again, so nothing waits
    /// for it and the next sync takes it along (most of what a follower hears, every session to the
    /// streak service, changes nothing it publishes).
    public func write<T>(now: Instant, copyOfUpstream: Bool = false, _ body: (Transaction) throws -> T,
                         committed: (Transaction) -> Void) throws -> T {
        if let current { return try current.isolated { try body(current) } }
        if checkpointer.takeRewindRequest() { rewindLog() }
        var transaction: Transaction?
        var changed = false
        let result: T
        do {
            result = try database.writeWithoutTransaction { db -> T in try Self.inTransaction(db) {
                let changesBefore = db.totalChangesCount
                let sql = SQLiteStoreConnection(db)
                let started = Transaction(readTablesBehindTheLog.map { .someBehindTheLog(sql: sql, $0) } ?? .all(sql: sql),
                                          source: eventLog.source, baseSeq: eventLog.lastSeq,
                                          insertRecord: "INSERT INTO outbox (seq, topic, envelope) VALUES (?, ?, ?)",
                                          compression: eventLog.compression, now: now, cursorTable: cursorTable)
                transaction = started
                current = started
                defer { current = nil }
                let result = try body(started)
                try started.storeRecords()
                if let projection, projection.followsLog, let last = started.events.last { try projection.applied(through: last.seq, in: db) }
                changed = db.totalChangesCount != changesBefore
                return result
            } }
        } catch {
            // Rolled back (the body threw, or the commit failed): memory goes back with the database.
            transaction?.rollBack()
            throw error
        }
        let done = transaction!
        if !done.events.isEmpty || (changed && !copyOfUpstream) { commits.didCommit() }
        if let behindTheLog, !done.events.isEmpty { behindTheLog.applier.enqueue(done.events, reads: []) }
        done.didCommit(into: eventLog)
        committed(done)
        return result
    }

    /// Runs `body` in an IMMEDIATE transaction (the write lock taken at once, as GRDB's `write`
    /// takes it) and commits it; rolls it back if either throws. Cached statements: GRDB parses its
    /// BEGIN and COMMIT anew each time, and the planner applies each of the logger's sessions in a
    /// transaction of its own (docs/decisions/0016-planner-deciding-loop.md).
    static func inTransaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try RawStatement.execute("BEGIN IMMEDIATE", db, [])
        do {
            let result = try body()
            try RawStatement.execute("COMMIT", db, [])
            return result
        } catch {
            // SQLite may have rolled back already (a full disk, an I/O error).
            if db.isInsideTransaction { _ = try? RawStatement.execute("ROLLBACK", db, []) }
            throw error
        }
    }

    public func read<T>(_ body: (Database) throws -> T) throws -> T { try database.read(body) }

    public func query<T>(_ body: (StoreConnection) throws -> T) throws -> T { try database.read { try body(SQLiteStoreConnection($0)) } }

    /// How a transaction reads the tables behind the log, where there are some: once they hold
    /// every commit (`Transaction.readTables`).
    private var readTablesBehindTheLog: ReadingBehindTheLog? {
        behindTheLog.map { behind in { [eventLog] body in try behind.query(through: eventLog.lastSeq, body) } }
    }

    public var concurrentReads: ConcurrentReads? { SQLiteConcurrentReads(database: database) }

    public func newestSeq() -> Int64 { eventLog.publishedSeq }

    /// Upstream cursors live with the projection where there is one: lost together with the copies
    /// it may hold, so a rebuilt projection follows its upstreams again from their start.
    private var cursorTable: String { projection == nil ? "main.cursor" : "\(ProjectionFile.schema).cursor" }

    public func cursor(_ upstream: String) throws -> (seq: Int64, logId: RecordID?) {
        try query { try EventLog.cursor(upstream, table: cursorTable, in: $0) }
    }

    /// The log passed its limit: once every frame is copied back, the next transaction rewinds it.
    /// The checkpointer's thread copies them while nothing is written. Not all copied: asked again next time.
    private func rewindLog() {
        let checkpoint = checkpointer.checkpointNow()
        if let waitAnsweringHealth {
            waitAnsweringHealth { checkpoint.isFinished }
        } else {
            checkpoint.wait()
        }
        if !checkpoint.copiedAll { checkpointer.requestRewind() }
    }

    /// For a clean stop: the projection is synced and marked so, and needs no rebuild after a reboot;
    /// the connections are closed, which releases the projection's lock. The store is unusable after.
    public func close() {
        checkpointer.close()
        behindTheLog?.close()
        do {
            try projection?.close(database)
        } catch {
            // Left unclean: a reboot rebuilds it from the log.
        }
        try? database.close()
    }
}

/// GRDB's queue serializes the reads of any thread on the store's connection.
struct SQLiteConcurrentReads: ConcurrentReads {
    let database: DatabaseQueue

    func readOnce(_ body: (StoreConnection) throws -> Void) throws {
        try database.read { db in
            let cacheSize = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2000
            try db.execute(sql: "PRAGMA cache_size = -1024")
            defer { try? db.execute(sql: "PRAGMA cache_size = \(cacheSize)") }
            try body(SQLiteStoreConnection(db))
        }
    }
}
