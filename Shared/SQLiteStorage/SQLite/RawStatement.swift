import Foundation
import GRDB
import GRDBSQLite
import Storage

/// A cached statement bound, stepped and read through SQLite's own calls: on the hot paths (the
/// planner's decisions, every stored record and event) GRDB's argument arrays, row cursors and a
/// `String` per column cost more than the queries themselves. The statement is reset and unbound
/// afterwards, as GRDB leaves its cached ones.
public enum RawStatement {
    /// A statement argument: the core's, the same for every backend.
    public typealias Value = SQLValue

    /// The current row, valid only inside the `run` body.
    public struct Row {
        @usableFromInline let handle: SQLiteStatement

        @usableFromInline init(handle: SQLiteStatement) { self.handle = handle }

        @inlinable public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

        /// The column's UTF-8 bytes in place (empty for NULL).
        @inlinable public func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
            guard let text = sqlite3_column_text(handle, column) else { return UnsafeBufferPointer(start: nil, count: 0) }
            return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column)))
        }

        /// The column's bytes as a blob, in place (empty for NULL or an empty blob).
        @inlinable public func blob(_ column: Int32) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: sqlite3_column_blob(handle, column), count: Int(sqlite3_column_bytes(handle, column)))
        }

        @inlinable public func string(_ column: Int32) -> String { String(decoding: bytes(column), as: UTF8.self) }

        @inlinable public func optionalString(_ column: Int32) -> String? { sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : string(column) }
    }

    /// Runs `sql` with `arguments` and returns what `read` makes of each row (nil rows are skipped).
    ///
    /// Text and blobs are copied into one scratch buffer and bound in place (SQLITE_STATIC):
    /// letting SQLite copy each one (SQLITE_TRANSIENT) cost a malloc, a copy and a free per value.
    /// Inlinable, so each caller's row type is specialized: unspecialized, every row asked the
    /// runtime for `Optional<Element>`'s metadata (docs/decisions/0016-planner-deciding-loop.md).
    @inlinable @discardableResult
    public static func run<Element>(_ sql: String, _ db: Database, _ arguments: [Value], read: (Row) throws -> Element?) throws -> [Element] {
        let handle = try db.cachedStatement(sql: sql).sqliteStatement
        let byteCount = arguments.reduce(0) { total, argument in
            switch argument {
            case .text(let value): total + value.utf8.count
            case .blob(let value): total + value.count
            case .integer, .null: total
            }
        }
        return try withUnsafeTemporaryAllocation(byteCount: max(byteCount, 1), alignment: 1) { scratch in
            // Unbound while the scratch is still there: SQLite never holds a dangling pointer.
            defer {
                sqlite3_reset(handle)
                sqlite3_clear_bindings(handle)
            }
            var used = 0
            /// `bytes` copied to the scratch; where they went.
            func place(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutableRawPointer {
                let start = scratch.baseAddress! + used
                if let source = bytes.baseAddress { memcpy(start, source, bytes.count) }
                used += bytes.count
                return start
            }
            for (offset, argument) in arguments.enumerated() {
                let index = Int32(offset + 1)
                let code = switch argument {
                case .integer(let value): sqlite3_bind_int64(handle, index, value)
                // The length in bytes, not -1: text may hold U+0000.
                case .text(var value):
                    value.withUTF8 { utf8 in
                        sqlite3_bind_text(handle, index, place(UnsafeRawBufferPointer(utf8)).assumingMemoryBound(to: CChar.self),
                                          Int32(utf8.count), nil)
                    }
                case .blob(let value) where value.isEmpty: sqlite3_bind_zeroblob(handle, index, 0)  // a nil pointer would bind NULL
                case .blob(let value): value.withUnsafeBytes { sqlite3_bind_blob(handle, index, place($0), Int32($0.count), nil) }
                case .null: sqlite3_bind_null(handle, index)
                }
                try check(code, db)
            }
            var result: [Element] = []
            while true {
                let code = sqlite3_step(handle)
                if code == SQLITE_DONE { return result }
                guard code == SQLITE_ROW else { throw error(code, db) }
                if let element = try read(Row(handle: handle)) { result.append(element) }
            }
        }
    }

    /// Runs `sql`, which returns no rows, and returns how many rows it changed.
    @inlinable @discardableResult
    public static func execute(_ sql: String, _ db: Database, _ arguments: [Value]) throws -> Int {
        try run(sql, db, arguments) { _ -> Never? in nil }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    @usableFromInline static func error(_ code: Int32, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
    }

    @usableFromInline static func check(_ code: Int32, _ db: Database) throws {
        if code != SQLITE_OK { throw error(code, db) }
    }
}
