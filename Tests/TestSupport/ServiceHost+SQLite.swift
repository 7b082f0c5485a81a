import GRDB
import ServiceHost
import SQLiteStorage
import Storage

// For tests of a service on the embedded backend: its files, pragmas and syncs.
extension ServiceHost {
    /// The SQLite store; a test that reaches it on PostgreSQL is a wrong test.
    public var sqlite: SQLiteStore {
        guard let store = store as? SQLiteStore else { preconditionFailure("\(name): SQLite-only code ran on PostgreSQL") }
        return store
    }

    public var database: DatabaseQueue { sqlite.database }

    public func read<T>(_ body: (Database) throws -> T) throws -> T { try sqlite.read(body) }
}
