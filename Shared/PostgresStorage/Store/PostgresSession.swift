import Foundation
import Storage

/// How a `PostgresStore` sets up its session: its tables without their schema, COMMIT returning
/// only once durable, and limits after which the server ends what this instance holds
/// (docs/decisions/0020-leases-expire-by-server-timeouts.md).
extension PostgresStore {
    /// The server drops a partitioned store's session once it has been idle this long: the services
    /// balance every second, so only an instance that stopped making progress (paused, stuck) is
    /// idle this long, and its partition leases (session advisory locks) go with its session.
    static let idleSessionTimeout = "10s"
    /// A transaction idle this long between its statements is ended with its session: a paused
    /// instance holding the log row's lock, which every instance's writes wait on, lets go of it.
    static let idleInTransactionTimeout = "5s"
    /// A statement that waits this long for a lock (the log row's, past the frozen holder's end
    /// above) fails, and its request answers `unavailable`.
    static let lockTimeout = "10s"
    // No statement_timeout: it ends a statement, not the session, so it frees no lease, and a
    // planner's start-up read of every reminder grows with the data.
    /// `idle_session_timeout` came with PostgreSQL 14.
    static let idleSessionTimeoutVersion = 140000
    /// The SQLSTATEs of a statement the limits ended (lock_not_available; query_canceled, should
    /// the server or the role set a statement_timeout).
    static let limitStates: Set<String> = ["55P03", "57014"]

    /// A connection whose statements name the service's tables without their schema, whose COMMIT
    /// returns only once durable, whatever the server's default. `partitioned`: the limits for a
    /// store that holds leases or not (`limit`); nil: none yet (migrations at start).
    static func connect(_ url: String, schema: String, partitioned: Bool?) throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url)
        // Off only to measure what the pipeline saves (`bench planner --postgres`).
        connection.pipelines = ProcessInfo.processInfo.environment["LHT_POSTGRES_PIPELINE"] != "off"
        try connection.execute("SET synchronous_commit = on")
        // The server drops this session within about 11 s of its client going silent (a host cut
        // off), and with it the log row's lock it may hold mid-batch, which every instance waits on.
        for setting in ["tcp_keepalives_idle = 5", "tcp_keepalives_interval = 2", "tcp_keepalives_count = 3", "tcp_user_timeout = 10000"] {
            try connection.execute("SET " + setting)
        }
        try connection.execute("SET search_path TO \(schema)")
        if let partitioned { try limit(connection, partitioned: partitioned) }
        return connection
    }

    /// Sets the server's limits on this session. A TCP keepalive is answered by a paused process's
    /// kernel, so only these end the session of an instance that stopped but still holds it.
    static func limit(_ connection: PostgresConnection, partitioned: Bool) throws {
        var settings = ["idle_in_transaction_session_timeout = '\(idleInTransactionTimeout)'", "lock_timeout = '\(lockTimeout)'"]
        if partitioned, connection.serverVersion >= idleSessionTimeoutVersion { settings.append("idle_session_timeout = '\(idleSessionTimeout)'") }
        for setting in settings { try connection.execute("SET " + setting) }
    }

    /// A server that answered and refused: trying again changes nothing.
    static func isRefusedForGood(_ error: PostgresError) -> Bool {
        ["password authentication failed", "no password supplied", "does not exist", "no pg_hba.conf entry"].contains {
            error.message.contains($0)
        }
    }
}
