import Foundation
import GRDB
import Logging
import Storage

/// A projection that a thread of its own applies behind the log (`ProjectionApplier`): its file
/// attached to an in-memory database that the thread writes, caught up from the log at start. The
/// whole of a log-only store's tables (`EventFileStore`), or some of `SQLiteStore`'s (the planner's
/// decisions: `TablesBehindTheLog`), which its write transactions then do not write.
final class ProjectionBehindTheLog {
    let file: ProjectionFile
    /// An in-memory main database with the file attached: statements name its tables unqualified.
    let database: DatabaseQueue
    let applier: ProjectionApplier

    /// `logDatabase`: where the log's table is, for a log that is not a file of its own.
    init(path: String, projection: Projection, log: EventLog, logDatabase: DatabaseQueue? = nil, bootID: String, logger: Logger) throws {
        file = try ProjectionFile(path: path, projection: projection, bootID: bootID, logger: logger)
        var configuration = Configuration()
        configuration.prepareDatabase { db in try ProjectionFile.attach(path, to: db) }
        database = try DatabaseQueue(configuration: configuration)
        try file.catchUp(database, log: log, logDatabase: logDatabase)
        applier = ProjectionApplier(database: database, projection: file, appliedSeq: log.lastSeq, logger: logger)
    }

    /// Reads the projection once it holds every event through `seq`: read-your-writes.
    func query<T>(through seq: Int64, _ body: (StoreConnection) throws -> T) throws -> T {
        try applier.waitUntilApplied(through: seq)
        return try database.read { try body(SQLiteStoreConnection($0)) }
    }

    /// Once every event is applied, the file is synced and marked clean, and its lock released.
    func close() {
        applier.stop()
        try? file.close(database)
        try? database.close()
    }
}
