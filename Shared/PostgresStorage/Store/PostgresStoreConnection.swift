import Foundation
import Storage

/// PostgreSQL through one libpq connection: `?` placeholders become `$1`, `$2`, … once per text.
public final class PostgresStoreConnection: StoreConnection {
    public let connection: PostgresConnection
    public var dialect: SQLDialect { .postgres }
    private var numbered: [String: String] = [:]

    public init(_ connection: PostgresConnection) { self.connection = connection }

    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try connection.command(postgresText(sql), arguments)
    }

    public func executeLater(_ sql: String, _ arguments: [SQLValue]) throws {
        try connection.enqueue(postgresText(sql), arguments)
    }

    public var hasStatementsWaiting: Bool { connection.hasQueued }

    public func executeLaterFailingOnlyWithTheTransaction(_ sql: String, _ arguments: [SQLValue]) throws {
        try connection.enqueue(postgresText(sql), arguments, failingOnlyWithTheTransaction: true)
    }

    public var hasStatementsWaitingThatMayFail: Bool { connection.hasQueuedThatMayFailAlone }

    /// `lht_expect`, in the service's schema (`PostgresLogTables.create`), which `search_path` names.
    public func expectLater(_ condition: String, _ arguments: [SQLValue], _ what: String) throws {
        try connection.enqueue(postgresText("SELECT lht_expect(\(condition), ?)"), arguments + [.text(what)], failingOnlyWithTheTransaction: true)
    }

    public func executeLater(_ sql: String, _ arguments: [SQLValue], changed: @escaping (Int) -> Void) throws {
        try connection.enqueue(postgresText(sql), arguments) { _, count in changed(count) }
    }

    public func forEachRowLater(_ sql: String, _ arguments: [SQLValue], _ body: @escaping (SQLRow) -> Void) throws {
        try connection.enqueue(postgresText(sql), arguments) { rows, _ in
            for row in rows { body(SQLRow(source: .text(row))) }
        }
    }

    public func sendWaiting() throws { try connection.flush() }

    public func forEachRow(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Void) throws {
        for row in try connection.execute(postgresText(sql), arguments) { try body(SQLRow(source: .text(row))) }
    }

    private func postgresText(_ sql: String) -> String {
        if let text = numbered[sql] { return text }
        let text = Self.numberingPlaceholders(sql)
        numbered[sql] = text
        return text
    }

    /// `?` outside quotes becomes `$n`. The statements are the stores' own (no `?` operators).
    static func numberingPlaceholders(_ sql: String) -> String {
        var result = "", count = 0, quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "?" {
                count += 1
                result += "$\(count)"
                continue
            }
            result.append(character)
        }
        return result
    }
}
