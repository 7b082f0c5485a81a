import Foundation

/// Which tables a write transaction's statements reach: each case carries the connection they run
/// on, and how to read those a thread applies behind the log from the events, once they hold
/// every commit before it.
public enum TransactionTables {
    /// Every table, on `sql`.
    case all(sql: StoreConnection)
    /// Every table on `sql` but those of `TablesBehindTheLog` (the planner's decisions).
    case someBehindTheLog(sql: StoreConnection, ReadingBehindTheLog)
    /// None: the transaction appends events only and every table is a projection behind the log
    /// (`EventFileStore`); the handler checks what it must from memory and its events, or reads
    /// the projection (`readTables`, which waits for it).
    case allBehindTheLog(ReadingBehindTheLog)
}

/// Runs `body` on tables applied behind the log once they hold every event committed before the
/// transaction that asks, without its own.
public typealias ReadingBehindTheLog = (_ body: (StoreConnection) throws -> Void) throws -> Void

/// The connection of a write transaction whose tables are all behind the log: every statement on
/// it is a mistake of the handler, which fails its request (`internal`).
final class NoTables: StoreConnection {
    struct Misuse: Error, CustomStringConvertible {
        var description: String { "a log-only store's write transaction has no tables: read them with readTables or Store.query" }
    }

    var dialect: SQLDialect { .sqlite }
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int { throw Misuse() }
    func forEachRow(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Void) throws { throw Misuse() }
}
