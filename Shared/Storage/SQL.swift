import Foundation
import CSQLite

/// Which SQL a connection speaks. A store writes each statement once, in the common subset of
/// SQLite and PostgreSQL (`?` placeholders, `ON CONFLICT`, `BIGINT`/`TEXT` columns), and asks the
/// dialect only where the two differ.
public enum SQLDialect: Sendable {
    case sqlite, postgres

    /// The column type of raw bytes (an event's envelope).
    public var bytesType: String { self == .sqlite ? "BLOB" : "BYTEA" }
}

/// A statement argument, the same for every backend.
public enum SQLValue: Sendable {
    case integer(Int64)
    case text(String)
    case blob(Data)
    case null

    /// Text, or NULL for nil.
    public static func text(_ value: String?) -> SQLValue { value.map { .text($0) } ?? .null }
}

/// What a store's statements run on: one backend's connection, inside a transaction or a read.
public protocol StoreConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs `sql`, which returns no rows, and returns how many rows it changed.
    @discardableResult func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int
    /// As `execute`, for a statement whose count nobody reads: a backend may send it later, with
    /// the next statement whose result is read or the commit (PostgreSQL's pipeline), and its
    /// error then fails that later call, in the same transaction.
    func executeLater(_ sql: String, _ arguments: [SQLValue]) throws
    /// Runs `sql` and gives `body` each row, valid only inside it. Not generic: a generic requirement
    /// is called unspecialized through the protocol, and asked the runtime for its element type's
    /// metadata at each query (a twentieth of the planner's deciding loop, in its coverage query).
    func forEachRow(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Void) throws
    /// Whether statements sent with `executeLater` still wait to go out (and so may yet fail).
    var hasStatementsWaiting: Bool { get }
    /// As `executeLater`, and `changed` gets its count of changed rows once it went out: at the
    /// latest when the next statement read (or `sendWaiting`) returns. Not called if it failed.
    func executeLater(_ sql: String, _ arguments: [SQLValue], changed: @escaping (Int) -> Void) throws
    /// As `forEachRow`, sent as `executeLater` is: `body` gets each row once it went out.
    func forEachRowLater(_ sql: String, _ arguments: [SQLValue], _ body: @escaping (SQLRow) -> Void) throws
    /// Sends the statements waiting (`executeLater`) and reads them back; throws the first error.
    func sendWaiting() throws
    /// As `executeLater`, for a statement that cannot fail on its own, only as its whole
    /// transaction does (a lost connection): a savepoint's RELEASE need not wait for it.
    func executeLaterFailingOnlyWithTheTransaction(_ sql: String, _ arguments: [SQLValue]) throws
    /// Whether a statement that may fail on its own (`executeLater`) still waits to go out.
    var hasStatementsWaitingThatMayFail: Bool { get }
    /// Fails the transaction unless `condition` (an SQL boolean, with `?` placeholders) holds when
    /// the statements before it have run: what a transaction that expects instead of reading
    /// (`Transaction.expectsInsteadOfReading`) checks. Sent as `executeLater` is; `what` names it
    /// in the error.
    func expectLater(_ condition: String, _ arguments: [SQLValue], _ what: String) throws
}

extension StoreConnection {
    public func executeLater(_ sql: String, _ arguments: [SQLValue]) throws { try execute(sql, arguments) }
    public var hasStatementsWaiting: Bool { false }
    public func executeLater(_ sql: String, _ arguments: [SQLValue], changed: @escaping (Int) -> Void) throws { changed(try execute(sql, arguments)) }
    public func forEachRowLater(_ sql: String, _ arguments: [SQLValue], _ body: @escaping (SQLRow) -> Void) throws { try forEachRow(sql, arguments, body) }
    public func sendWaiting() throws {}
    public func executeLaterFailingOnlyWithTheTransaction(_ sql: String, _ arguments: [SQLValue]) throws { try executeLater(sql, arguments) }
    public var hasStatementsWaitingThatMayFail: Bool { hasStatementsWaiting }
    public func expectLater(_ condition: String, _ arguments: [SQLValue], _ what: String) throws {
        guard try first("SELECT CASE WHEN \(condition) THEN 1 ELSE 0 END", arguments, { $0.integer(0) }) == 1 else {
            throw StorageError("expected \(what)")
        }
    }

    /// Runs `sql` and returns what `read` makes of each row (nil rows are skipped). Inlinable, so
    /// that each caller's `Element` is specialized.
    @inlinable
    public func rows<Element>(_ sql: String, _ arguments: [SQLValue], _ read: (SQLRow) throws -> Element?) throws -> [Element] {
        var result: [Element] = []
        try forEachRow(sql, arguments) { row in
            if let element = try read(row) { result.append(element) }
        }
        return result
    }

    /// The first row's value, if there is a row.
    @inlinable
    public func first<Element>(_ sql: String, _ arguments: [SQLValue], _ read: (SQLRow) throws -> Element?) throws -> Element? {
        try rows(sql, arguments, read).first
    }

    /// Appends column 0 of each row (stored JSON) to `json`, comma-separated: the inside of a reply's
    /// array, each value copied once, from the row into the reply.
    public func appendJSONArrayElements(_ sql: String, _ arguments: [SQLValue], to json: inout Data) throws {
        try appendJSONArrayElements(sql, arguments, to: &json, storedBy: nil)
    }

    /// As above, for envelopes of a log that `compression` stored.
    func appendJSONArrayElements(_ sql: String, _ arguments: [SQLValue], to json: inout Data, storedBy compression: StoredEnvelopes?) throws {
        var first = true
        try forEachRow(sql, arguments) { row in
            if !first { json.append(UInt8(ascii: ",")) }
            first = false
            if let compression {
                try row.withBytes(0) { try compression.expand($0, into: &json) }
            } else {
                row.withBytes(0) { json.append(contentsOf: $0) }
            }
        }
    }
}

/// The current row of a query, valid only inside the `rows` body. Each reader answers nil for
/// NULL and for a value of another type, and never traps: a damaged row is reported, not fatal.
/// Inlinable, as `StoreConnection.rows` is: each caller (a loop over a million rows) gets its row
/// type specialized and each read inlined, SQLite's column calls among them (so the core knows
/// SQLite's header, not its driver).
public struct SQLRow {
    public enum Source {
        /// The statement SQLite stepped to the row.
        case sqlite(OpaquePointer)
        case text(TextRow)
    }

    @usableFromInline let source: Source

    @inlinable public init(source: Source) { self.source = source }

    @inlinable public func integer(_ column: Int) -> Int64? {
        switch source {
        case .sqlite(let row): sqlite3_column_type(row, Int32(column)) == SQLITE_INTEGER ? sqlite3_column_int64(row, Int32(column)) : nil
        case .text(let row): row.int64(column)
        }
    }

    @inlinable public func text(_ column: Int) -> String? {
        switch source {
        case .sqlite(let row): sqlite3_column_type(row, Int32(column)) == SQLITE_TEXT ? String(decoding: Self.utf8(row, column), as: UTF8.self) : nil
        case .text(let row): row.text(column)
        }
    }

    @inlinable public func isNull(_ column: Int) -> Bool {
        switch source {
        case .sqlite(let row): sqlite3_column_type(row, Int32(column)) == SQLITE_NULL
        case .text(let row): row.text(column) == nil
        }
    }

    /// A text column's UTF-8 bytes, handed to `body` in place where the backend allows (SQLite's
    /// page: no `String` per row on a hot path); nil for NULL and for a value that is not text.
    @inlinable public func withUTF8<T>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T? {
        switch source {
        case .sqlite(let row):
            guard sqlite3_column_type(row, Int32(column)) == SQLITE_TEXT else { return nil }
            return try body(Self.utf8(row, column))
        case .text(let row):
            guard var text = row.text(column) else { return nil }
            return try text.withUTF8(body)
        }
    }

    /// A nullable text column: `.some(nil)` for NULL, nil for a value that is not text.
    @inlinable public func optionalText(_ column: Int) -> String?? {
        isNull(column) ? .some(nil) : text(column).map { .some($0) }
    }

    /// Raw bytes, handed to `body` in place where the backend allows (SQLite's page).
    @inlinable public func withBytes<T>(_ column: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T? {
        switch source {
        case .sqlite(let row):
            return try body(UnsafeRawBufferPointer(start: sqlite3_column_blob(row, Int32(column)), count: Int(sqlite3_column_bytes(row, Int32(column)))))
        case .text(let row):
            guard let bytes = row.bytes(column) else { return nil }
            return try bytes.withUnsafeBytes(body)
        }
    }

    /// A SQLite text column's UTF-8 bytes in place (empty for NULL).
    @inlinable static func utf8(_ row: OpaquePointer, _ column: Int) -> UnsafeBufferPointer<UInt8> {
        guard let text = sqlite3_column_text(row, Int32(column)) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(row, Int32(column))))
    }
}
