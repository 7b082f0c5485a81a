import Foundation
import Storage
import Testing

/// A migration's steps run in order, each on the dialect it is written for, and data steps on the
/// connection itself; a `bytea` column reads back from either of PostgreSQL's text forms.
@Suite struct MigrationTests {
    /// Records what runs on it, as a backend's connection would run it.
    final class Recording: StoreConnection {
        let dialect: SQLDialect
        var ran: [String] = []

        init(_ dialect: SQLDialect) { self.dialect = dialect }

        func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
            ran.append(sql)
            return 0
        }

        func forEachRow(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Void) throws { ran.append(sql) }
    }

    static let migration = Migration("tables", [
        .sql("CREATE TABLE a (x BIGINT)"),
        .only(.sqlite, "CREATE INDEX a_x ON a (x)"),
        .only(.postgres, "CREATE INDEX a_x ON a USING brin (x)"),
        .data { sql in try sql.execute("INSERT INTO a (x) VALUES (?)", [.integer(1)]) },
        .sql("DROP TABLE b"),
    ])

    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func stepsRunInOrderEachOnItsDialect(_ dialect: SQLDialect) throws {
        let connection = Recording(dialect)
        var executed: [String] = []
        try Self.migration.run(on: connection) { executed.append($0) }
        let index = dialect == .sqlite ? "CREATE INDEX a_x ON a (x)" : "CREATE INDEX a_x ON a USING brin (x)"
        #expect(executed == ["CREATE TABLE a (x BIGINT)", index, "DROP TABLE b"])
        #expect(connection.ran == ["INSERT INTO a (x) VALUES (?)"], "the data step, on the connection")
        #expect(Self.migration.statements(for: dialect) == executed)
    }

    @Test func byteaReadsBackFromBothTextForms() {
        let row = TextRow(columns: ["\\x00ff10Ab", #"a\\b\001\377"#, "\\x0", "\\xzz", nil])
        #expect(row.bytes(0) == [0x00, 0xff, 0x10, 0xab])
        #expect(row.bytes(1) == [UInt8(ascii: "a"), UInt8(ascii: "\\"), UInt8(ascii: "b"), 0o001, 0o377])
        #expect(row.bytes(2) == nil && row.bytes(3) == nil, "not whole hex pairs")
        #expect(row.bytes(4) == nil)
    }
}
