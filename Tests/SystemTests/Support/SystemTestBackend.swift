import Foundation
import PostgresStorage
import Synchronization
import Testing

/// Where the system tests' services store: SQLite in their data directories, or, with
/// `LHT_TEST_BACKEND=postgresql` (the second pass of `deploy/run-tests`), PostgreSQL: one server of
/// this test process's own, and a database per data directory, so that a service started again on
/// its directory finds its data and no two tests share a log.
enum SystemTestBackend {
    static let isPostgreSQL = ProcessInfo.processInfo.environment["LHT_TEST_BACKEND"] == "postgresql"

    /// For a suite that starts PostgreSQL itself: the PostgreSQL pass would run it again, alike.
    static let onceOnly = ConditionTrait.disabled(if: isPostgreSQL, "runs on PostgreSQL in the first pass already")

    private static let server = Mutex<TestPostgres?>(nil)

    /// The `--database` URL for a service whose data directory is `directory`; nil on SQLite.
    static func database(for directory: URL) throws -> String? {
        guard isPostgreSQL else { return nil }
        return try server.withLock { server in
            let postgres = try server ?? TestPostgres()
            server = postgres
            // FNV-1a of the path: the same directory, the same database.
            let name = "t_" + String(directory.standardizedFileURL.path.utf8.reduce(UInt64(0xcbf29ce484222325)) { ($0 ^ UInt64($1)) &* 0x100000001b3 }, radix: 16)
            do {
                try postgres.connect().execute("CREATE DATABASE \(name)")
            } catch let error as PostgresError where error.kind == .statement(sqlState: "42P04") {
                // Made before: a restart on the same directory.
            }
            return postgres.url.replacingOccurrences(of: "/postgres?", with: "/\(name)?")
        }
    }
}
