import LHTSchema
import Storage

// A standby promoted without the last log entries this instance saw committed (asynchronous
// replication): the seqs after the new primary's head would go to new events, and a follower that
// had the lost ones would take the new ones for them and skip them. The log takes a new identity
// instead, so followers see an upstream reset (PROTOCOL "The database's own failover").
extension PostgresStore {
    /// Compares the log on a new connection with what this instance saw before it lost the last one:
    /// the same identity, and a head at or past every seq it saw committed. A head behind them is
    /// logged as an error and the log renewed; an identity another instance renewed is taken on.
    func checkLogAfterReconnect(_ connection: PostgresConnection) throws {
        let timeline = Self.timeline(connection)
        if let before = self.timeline, let timeline, timeline != before {
            logger.warning("PostgreSQL failed over: the server is on another timeline (a standby was promoted)",
                           metadata: ["timeline": "\(before) → \(timeline)"])
        }
        self.timeline = timeline ?? self.timeline
        let seen = max(eventLog.lastSeq, eventLog.publishedSeq)
        let head = try connection.transaction { try logTables.lockHead(in: $0) }
        if RecordID(head.identity) != eventLog.identity {
            try adoptIdentity(head.identity, lastSeq: head.lastSeq)
        } else if head.lastSeq < seen {
            logger.error("PostgreSQL lost committed log entries (a standby promoted without them): the log takes a new identity, and followers start again from it",
                         metadata: ["seenSeq": "\(seen)", "databaseSeq": "\(head.lastSeq)", "logId": "\(eventLog.identity)"])
            let renewed = try connection.transaction { try logTables.renewIdentity(replacing: head.identity, in: $0) }
            try adoptIdentity(renewed, lastSeq: head.lastSeq)
        }
    }

    /// The server's WAL timeline, which a promotion moves on (the first 8 hex digits of the current
    /// WAL file's name); nil where the role may not ask.
    static func timeline(_ connection: PostgresConnection) -> Int? {
        (try? connection.execute("SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)").first?.text(0)).flatMap { $0.flatMap { Int($0, radix: 16) } }
    }

    /// From here on the log is the one of `identity`, `lastSeq` its newest committed seq.
    func adoptIdentity(_ identity: String, lastSeq: Int64) throws {
        guard let id = RecordID(identity) else { throw StorageError("the log identity \(identity) is not a UUID") }
        logger.error("the log has a new identity: events from here on are of it", metadata: [
            "was": "\(eventLog.identity)", "now": "\(identity)", "lastSeq": "\(lastSeq)"])
        eventLog = EventLog(source: eventLog.source, identity: id, lastSeq: lastSeq, records: .table("\(logTables.schemaName).log", compression: nil))
    }
}
