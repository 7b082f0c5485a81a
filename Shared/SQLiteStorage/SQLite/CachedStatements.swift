import GRDB

/// One-statement helpers that prepare each SQL text once per connection: re-parsing the SQL was
/// a large part of a request's cost (docs/decisions/0016-planner-deciding-loop.md). Multi-statement
/// scripts (migrations) use `execute(sql:)`.
extension Database {
    public func run(_ sql: String, arguments: StatementArguments = []) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }

    public func fetchRow(_ sql: String, arguments: StatementArguments = []) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }

    public func fetchRows(_ sql: String, arguments: StatementArguments = []) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: arguments)
    }

    public func fetchValue<Value: DatabaseValueConvertible & StatementColumnConvertible>(
        _ type: Value.Type, _ sql: String, arguments: StatementArguments = []
    ) throws -> Value? {
        try Value.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }
}
