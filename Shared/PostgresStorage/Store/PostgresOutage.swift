import Storage

/// A lost connection: the database cannot be reached.
extension PostgresError: StoreOutage {
    public var outage: (label: String, message: String)? {
        kind == .connection ? (StoreUnavailable.Cause.databaseUnreachable, "the database is unavailable: \(message)") : nil
    }

    /// A lost connection, or a transaction the server already aborted (25P02: an earlier statement
    /// failed outside any savepoint, such as the log row's lock): no savepoint can isolate what follows.
    public var endsTransaction: Bool {
        kind == .connection || kind == .statement(sqlState: "25P02")
    }
}
