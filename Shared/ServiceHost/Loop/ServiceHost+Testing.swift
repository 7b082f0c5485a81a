import GRDB
import SQLiteStorage
import Storage

// Hooks for tests of the embedded backend; internal, so `@testable` test targets alone see them.
extension ServiceHost {
    /// The SQLite store, for tests of the embedded backend (its files, pragmas and syncs).
    var sqlite: SQLiteStore {
        guard let store = store as? SQLiteStore else { preconditionFailure("\(name): SQLite-only code ran on PostgreSQL") }
        return store
    }

    var database: DatabaseQueue { sqlite.database }

    func read<T>(_ body: (Database) throws -> T) throws -> T { try sqlite.read(body) }
}
