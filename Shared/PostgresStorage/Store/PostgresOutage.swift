import Storage

/// A lost connection: the database cannot be reached.
extension PostgresError: StoreOutage {
    public var outage: (label: String, message: String)? {
        kind == .connection ? (StoreUnavailable.Cause.databaseUnreachable, "the database is unavailable: \(message)") : nil
    }
}
