import Foundation
import GRDB

/// A throwaway SQLite database for the persistence floors the benchmarks set beside their figures:
/// WAL mode with `synchronous` FULL (the services' durability, each commit waiting for the disk) or
/// OFF (no waiting: SQLite's own work), holding the services' `outbox` table and `schema`. Removed
/// once `body` returns.
enum ScratchDatabase {
    static func with<T>(synchronous: String = "FULL", schema: String = "", _ body: (DatabaseQueue) throws -> T) throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lht-floor-\(UUID().uuidString.prefix(8)).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous)") }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        try database.write { db in
            try db.execute(sql: "CREATE TABLE outbox (seq INTEGER PRIMARY KEY NOT NULL, topic TEXT NOT NULL, envelope BLOB NOT NULL);" + schema)
        }
        return try body(database)
    }
}
