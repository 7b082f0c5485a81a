import GRDB
import Storage

/// SQLite runs a service's migrations through GRDB's migrator, each under its name, so a file made
/// by an older build goes on from the last one it recorded.
extension DatabaseMigrator {
    public mutating func register(_ migrations: [Migration]) {
        for migration in migrations {
            registerMigration(migration.name) { db in
                try migration.run(on: SQLiteStoreConnection(db)) { try db.execute(sql: $0) }
            }
        }
    }
}
