import Foundation
import GRDB
import LHTSchema
import Logging
import Storage

/// The embedded backend of a service whose log is its only durable state (`SQLiteLayout.logOnly`:
/// the session logger): the log is an `EventFile` (`<service>.events`), each event written once as
/// it was published, and the tables are its projection (`<service>.projection.sqlite`), as in
/// `SQLiteStore`, which a thread of its own applies behind the log (`ProjectionApplier`). A commit
/// writes the events to the file and hands them to that thread; the file's sync (`CommitSync`) is
/// what replies and events wait for. A request's read runs on that thread at its point in the log
/// (`readsBehindTheLog`); any other read waits for the projection to hold every commit (`query`).
/// No b-tree and no WAL for the log, so no checkpoints either (docs/decisions/0001-event-file-log.md).
///
/// A log that `SQLiteStore` kept (`<service>.sqlite`) is copied into the file at the first start,
/// with its identity, and then removed.
public final class EventFileStore: Store {
    public let path: String
    public let eventLog: EventLog
    /// Syncs the file; replies and events wait in it for the sync that covers them.
    public let commits: CommitSync
    public var durability: Durability { commits }
    /// An in-memory main database with the projection attached: its statements name tables unqualified.
    public var database: DatabaseQueue { projection.database }
    private let file: EventFile
    /// The tables, applied from each commit's events on a thread of their own.
    private let projection: ProjectionBehindTheLog
    private var applier: ProjectionApplier { projection.applier }
    /// The transaction in progress, so a nested `write` joins it instead of deadlocking.
    private var current: Transaction?
    /// None: a sync writes the sectors its records touch, not a page (`SectorWriter`), so a record
    /// with a sync of its own stays cheap, and waiting for others would only delay every ack
    /// (docs/decisions/0003-group-commit-window.md).
    public var groupCommitNanoseconds: UInt64 { 0 }
    public var readsBehindTheLog: ReadsBehindTheLog? { applier }
    /// Nothing to wait for: the log is never rewound.
    public var waitAnsweringHealth: ((_ isFinished: @escaping () -> Bool) -> Void)?
    /// Never called: no other instance waits on this store's writes.
    public var logLockReleased: ((_ heldNanoseconds: UInt64) -> Void)?

    public init(directory: URL, name: String, sqliteMigrations: [Migration], projection: Projection,
                logger: Logger, bootID: String = BootID.current) throws {
        _ = SQLiteProcess.configured
        path = directory.appendingPathComponent("\(name).events").path
        let sqlitePath = directory.appendingPathComponent("\(name).sqlite").path
        if !FileManager.default.fileExists(atPath: path) {
            if FileManager.default.fileExists(atPath: sqlitePath) {
                try Self.copyLog(from: sqlitePath, migrations: sqliteMigrations, to: path, logger: logger)
            } else {
                try EventFile.create(path: path, identity: RecordID())
            }
        }
        // Also after a start that stopped between the copy's rename and this.
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: sqlitePath + suffix) {
            try FileManager.default.removeItem(atPath: sqlitePath + suffix)
        }
        file = try EventFile(path: path, logger: logger)
        eventLog = EventLog(source: name, file: file)
        self.projection = try ProjectionBehindTheLog(path: directory.appendingPathComponent("\(name).projection.sqlite").path, projection: projection,
                                                     log: eventLog, bootID: bootID, logger: logger)
        commits = CommitSync(eventFile: file, logger: logger)
    }

    /// Copies the records of `SQLiteStore`'s log into a new event file, with the log's identity, so
    /// every seq, envelope and follower's cursor stays valid.
    private static func copyLog(from sqlitePath: String, migrations: [Migration], to path: String, logger: Logger) throws {
        let started = Date()
        let database = try DatabaseQueue(path: sqlitePath)
        defer { try? database.close() }
        var migrator = DatabaseMigrator()
        migrator.register(EventLog.sqliteMigrations)
        migrator.register(migrations)
        try migrator.migrate(database)
        let log = try EventLog(source: "", database: database)
        try database.read { db in
            let sql = SQLiteStoreConnection(db)
            try EventFile.create(path: path, identity: log.identity) { write in
                var from: Int64 = 0
                while from < log.lastSeq {
                    var page: [PendingEvent] = []
                    try log.forEach(after: from, limit: 10_000, in: sql) { seq, topic, envelope in
                        page.append(PendingEvent(type: "", seq: seq, topic: topic, envelope: envelope))
                    }
                    guard let last = page.last else { break }
                    try write(page)
                    from = last.seq
                }
            }
        }
        logger.notice("copied the event log out of its SQLite file into a file of its own", metadata: [
            "file": "\(path)", "events": "\(log.lastSeq)", "seconds": "\(String(format: "%.2f", Date().timeIntervalSince(started)))"])
    }

    /// As `SQLiteStore.write`, with no tables (`Transaction.hasTables`): the body appends events and
    /// checks what it must from memory, its events, or the projection (`readTables`). The events go
    /// to the file (the kernel), then to the projection's thread; a commit that fails takes its
    /// events off the file again.
    public func write<T>(now: Instant, copyOfUpstream: Bool = false, _ body: (Transaction) throws -> T,
                         committed: (Transaction) -> Void) throws -> T {
        if let current { return try current.isolated { try body(current) } }
        let transaction = Transaction(.allBehindTheLog { [unowned self] body in try query(body) }, source: eventLog.source,
                                      baseSeq: eventLog.lastSeq, insertRecord: nil, now: now, cursorTable: "\(ProjectionFile.schema).cursor")
        current = transaction
        defer { current = nil }
        let result: T
        do {
            result = try body(transaction)
            try file.append(transaction.events)
        } catch {
            file.truncate(after: eventLog.lastSeq)
            transaction.rollBack()
            throw error
        }
        if !transaction.events.isEmpty { commits.didCommit() }
        if !transaction.events.isEmpty || !transaction.pointReads.isEmpty { applier.enqueue(transaction.events, reads: transaction.pointReads) }
        transaction.didCommit(into: eventLog)
        committed(transaction)
        return result
    }

    /// Reads the projection once it holds every event committed so far: read-your-writes.
    public func query<T>(_ body: (StoreConnection) throws -> T) throws -> T { try projection.query(through: eventLog.lastSeq, body) }

    public func newestSeq() -> Int64 { eventLog.publishedSeq }

    public func cursor(_ upstream: String) throws -> (seq: Int64, logId: RecordID?) {
        try query { try EventLog.cursor(upstream, table: "\(ProjectionFile.schema).cursor", in: $0) }
    }

    /// As `SQLiteStore.close`, once every event is applied: the projection is synced and marked
    /// clean, and its lock released; the records' offsets are saved for the next start.
    public func close() {
        projection.close()
        try? file.saveIndex()
    }
}
