import Foundation
import GRDB
import GRDBSQLite
import Storage

/// SQLite through GRDB's connection, for the length of one access: cached statements, bound and
/// read by `RawStatement`.
public final class SQLiteStoreConnection: StoreConnection {
    public let db: Database
    public var dialect: SQLDialect { .sqlite }
    /// Made inside a transaction (`SQLiteStore.write`, a projection's), which SQLite may roll back
    /// by itself (an I/O error): then every statement fails, as GRDB's own do in its transactions,
    /// rather than run and commit on its own.
    @usableFromInline let inTransaction: Bool

    public init(_ db: Database) {
        self.db = db
        inTransaction = sqlite3_get_autocommit(db.sqliteConnection) == 0
    }

    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try checkNotAborted()
        return try RawStatement.execute(sql, db, arguments)
    }

    /// Inlinable: a caller holding this type (loading a million rows) gets each row's body inlined.
    @inlinable
    public func forEachRow(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Void) throws {
        try checkNotAborted()
        try RawStatement.run(sql, db, arguments) { row -> Never? in
            try body(SQLRow(source: .sqlite(row.handle)))
            return nil
        }
    }

    @inlinable func checkNotAborted() throws {
        if inTransaction, sqlite3_get_autocommit(db.sqliteConnection) != 0 {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "the transaction was rolled back by SQLite")
        }
    }
}
