import Foundation
import GRDB
import LHTSchema
import Logging

/// The embedded backend of a service whose log is its only durable state (`StoreLayout.logOnly`:
/// the session logger): the log is an `EventFile` (`<service>.events`), each event written once as
/// it was published, and the tables are its projection (`<service>.projection.sqlite`), as in
/// `SQLiteStore`. A commit writes the events to the file, then commits the projection; the file's
/// sync (`CommitSync`) is what replies and events wait for. No b-tree and no WAL for the log, so no
/// checkpoints either: README "The log as a file".
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
    public let database: DatabaseQueue
    private let file: EventFile
    private let projection: ProjectionFile
    /// The transaction in progress, so a nested `write` joins it instead of deadlocking.
    private var current: Transaction?
    /// A record costs a third of the bytes it does in SQLite's log, so syncs can come closer together
    /// within the same 3 KB a record (README "The log as a file").
    public var groupCommitNanoseconds: UInt64 { 2_000_000 }
    /// Nothing to wait for: the log is never rewound.
    public var waitWhileRewinding: ((_ isFinished: @escaping () -> Bool) -> Void)?

    public init(directory: URL, name: String, sqliteMigrations: (inout DatabaseMigrator) -> Void, projection: Projection,
                logger: Logger, bootID: String = BootID.current) throws {
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
        self.projection = try ProjectionFile(path: directory.appendingPathComponent("\(name).projection.sqlite").path, projection: projection,
                                             bootID: bootID, logger: logger)
        let projectionPath = self.projection.path
        var configuration = Configuration()
        configuration.prepareDatabase { db in try ProjectionFile.attach(projectionPath, to: db) }
        database = try DatabaseQueue(configuration: configuration)
        eventLog = EventLog(source: name, file: file)
        try self.projection.catchUp(database, log: eventLog)
        commits = CommitSync(eventFile: file, logger: logger)
    }

    /// Copies the records of `SQLiteStore`'s log into a new event file, with the log's identity, so
    /// every seq, envelope and follower's cursor stays valid.
    private static func copyLog(from sqlitePath: String, migrations: (inout DatabaseMigrator) -> Void, to path: String, logger: Logger) throws {
        let started = Date()
        let database = try DatabaseQueue(path: sqlitePath)
        defer { try? database.close() }
        var migrator = DatabaseMigrator()
        EventLog.migrate(&migrator)
        migrations(&migrator)
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

    /// As `SQLiteStore.write`. The events reach the file (the kernel) before the projection commits,
    /// so a `kill -9` can leave the projection behind the log, which a start catches up, and never
    /// ahead of it. A commit that fails takes its events off the file again.
    public func write<T>(now: Instant, copyOfUpstream: Bool = false, _ body: (Transaction) throws -> T,
                         committed: (Transaction) -> Void) throws -> T {
        if let current { return try current.isolated { try body(current) } }
        var transaction: Transaction?
        let result: T
        do {
            result = try database.write { db -> T in
                let started = Transaction(sql: SQLiteStoreConnection(db), source: eventLog.source, baseSeq: eventLog.lastSeq, insertRecord: nil,
                                          now: now, cursorTable: "\(ProjectionFile.schema).cursor")
                transaction = started
                current = started
                defer { current = nil }
                let result = try body(started)
                if let last = started.events.last { try projection.applied(through: last.seq, in: db) }
                try file.append(started.events)
                return result
            }
        } catch {
            file.truncate(after: eventLog.lastSeq)
            transaction?.rollBack()
            throw error
        }
        let done = transaction!
        // Only the events need the disk: the projection is rebuilt from them.
        if !done.events.isEmpty { commits.didCommit() }
        done.didCommit(into: eventLog)
        committed(done)
        return result
    }

    public func query<T>(_ body: (StoreConnection) throws -> T) throws -> T { try database.read { try body(SQLiteStoreConnection($0)) } }

    public func newestSeq() -> Int64 { eventLog.publishedSeq }

    public func cursor(_ upstream: String) throws -> (seq: Int64, logId: RecordID?) {
        try query { try EventLog.cursor(upstream, table: "\(ProjectionFile.schema).cursor", in: $0) }
    }

    /// As `SQLiteStore.close`: the projection is synced and marked clean, and its lock released; the
    /// records' offsets are saved for the next start.
    public func close() {
        try? file.saveIndex()
        try? projection.close(database)
        try? database.close()
    }
}
