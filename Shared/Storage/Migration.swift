/// One step in the history of a service's tables, run once per database and recorded by its name:
/// SQLite records it in GRDB's `grdb_migrations`, PostgreSQL in the schema's `migration` table. A
/// migration that ran is never edited: a file or schema made by an older build migrates through the
/// same names, in the same order.
public struct Migration: Sendable {
    /// What a migration does, in order, inside the transaction that records it.
    public enum Step: Sendable {
        /// SQL both dialects take. On SQLite one text may hold several statements.
        case sql(String)
        /// SQL for one dialect only: the other skips it.
        case only(SQLDialect, String)
        /// Rows moved by code, where the dialect's SQL cannot compute them (a record id's text to its
        /// bytes, which SQLite has no function for).
        case data(@Sendable (StoreConnection) throws -> Void)
    }

    public let name: String
    public let steps: [Step]

    public init(_ name: String, _ steps: [Step]) {
        self.name = name
        self.steps = steps
    }

    /// A migration of statements both dialects take, run in order.
    public init(_ name: String, sql statements: [String]) {
        self.init(name, statements.map(Step.sql))
    }

    /// A migration of SQLite's only (its history before a table was written for both backends).
    public static func sqlite(_ name: String, _ sql: String) -> Migration { sqlite(name, [sql]) }

    public static func sqlite(_ name: String, _ statements: [String]) -> Migration {
        Migration(name, statements.map { .only(.sqlite, $0) })
    }

    /// A migration of PostgreSQL's only, its statements run in order.
    public static func postgres(_ name: String, _ statements: [String]) -> Migration {
        Migration(name, statements.map { .only(.postgres, $0) })
    }

    /// The texts of SQL `dialect` runs, in order (a data step has none).
    public func statements(for dialect: SQLDialect) -> [String] {
        steps.compactMap { step in
            switch step {
            case .sql(let text): text
            case .only(let only, let text) where only == dialect: text
            case .only, .data: nil
            }
        }
    }

    /// Runs the steps for `sql`'s dialect: `execute` runs a text of SQL (several statements, where the
    /// backend takes them so), a data step runs on `sql` itself.
    public func run(on sql: StoreConnection, execute: (String) throws -> Void) throws {
        for step in steps {
            switch step {
            case .sql(let text): try execute(text)
            case .only(let dialect, let text) where dialect == sql.dialect: try execute(text)
            case .only: break
            case .data(let body): try body(sql)
            }
        }
    }
}
