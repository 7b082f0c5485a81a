import Foundation
import GRDB
import ServiceHost
import SQLiteStorage
import Storage

/// A throwaway SQLite database for the persistence floors the benchmarks set beside their figures:
/// WAL mode with `synchronous` FULL (the services' durability, each commit waiting for the disk) or
/// OFF (no waiting: SQLite's own work), holding the services' outbox (`EventLog.sqliteMigrations`), a
/// service's tables (`migrations`) and the bare tables of `schema`. Removed once `body` returns.
enum ScratchDatabase {
    static func with<T>(synchronous: String = "FULL", migrations: [Migration] = [], schema: String = "",
                        _ body: (DatabaseQueue) throws -> T) throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lht-floor-\(UUID().uuidString.prefix(8)).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous)") }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.register(EventLog.sqliteMigrations)
        migrator.register(migrations)
        try migrator.migrate(database)
        if !schema.isEmpty { try database.write { db in try db.execute(sql: schema) } }
        return try body(database)
    }

    /// The mean size of a record in an event file (`EventFileStore`: the session logger's log) that
    /// holds `records`, as stored: its envelope, seq, topic and check (the file's header is counted too).
    static func meanEventFileRecordBytes(_ path: String, records: Int) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0) / max(records, 1)
    }

    /// The mean size of the newest `last` events a service stored in its log file (`database`), as stored
    /// (compressed): the planner's decisions, the logger's sessions. A floor's outbox rows take this size.
    static func meanStoredEnvelopeBytes(database: String, last: Int) throws -> Int {
        try DatabaseQueue(path: database).read { db in
            try Int.fetchOne(db, sql: "SELECT CAST(AVG(LENGTH(envelope)) AS INTEGER) FROM (SELECT envelope FROM outbox ORDER BY seq DESC LIMIT ?)",
                             arguments: [max(last, 1)]) ?? 0
        }
    }
}
