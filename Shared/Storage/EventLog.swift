import Foundation
import LHTSchema

/// The outbox: every event is stored with its gap-free `seq` in the transaction that caused it,
/// and published only after that transaction commits.
public final class EventLog {
    public let source: String
    /// The newest committed seq; the next event gets `lastSeq + 1`.
    public private(set) var lastSeq: Int64
    /// The newest seq on disk and published: what heartbeats and `health` announce.
    public private(set) var publishedSeq: Int64
    /// This log's identity, made with the database: seqs mean something only together with it.
    public let identity: RecordID

    /// Where the records are: a table (seq, topic, envelope), or a file of their own.
    package enum Records {
        /// `compression`: how the table stores envelopes, where they are not stored as they are (SQLite's).
        case table(String, compression: StoredEnvelopes?)
        case file(RecordFile)
    }

    package let records: Records

    package init(source: String, identity: RecordID, lastSeq: Int64, records: Records) {
        self.source = source
        self.identity = identity
        self.lastSeq = lastSeq
        self.records = records
        publishedSeq = lastSeq
    }

    /// The log of a file of records: every record in it is committed.
    package convenience init(source: String, file: RecordFile) {
        self.init(source: source, identity: file.identity, lastSeq: file.lastSeq, records: .file(file))
    }

    /// How the log's table stores envelopes, where it compresses them.
    package var compression: StoredEnvelopes? {
        if case .table(_, let compression) = records { return compression }
        return nil
    }

    /// The log holds every seq through `seq`: this instance committed it, or (PostgreSQL) another
    /// instance had when this one took the log row's lock.
    package func committed(through seq: Int64) { lastSeq = seq }

    public func published(through seq: Int64) { publishedSeq = seq }

    /// The seq an upstream feed was applied through, and the identity of the log those seqs are of.
    package static func cursor(_ upstream: String, table: String, in sql: StoreConnection) throws -> (seq: Int64, logId: RecordID?) {
        try sql.first("SELECT seq, log_id FROM \(table) WHERE upstream = ?", [.text(upstream)]) { row in
            (row.integer(0) ?? 0, row.text(1).flatMap(RecordID.init))
        } ?? (0, nil)
    }

    /// Calls `body` with each committed event after `seq`, at most `limit` of them, in seq order: its
    /// seq, its topic and its envelope as published.
    package func forEach(after seq: Int64, limit: Int, in sql: StoreConnection,
                 _ body: (_ seq: Int64, _ topic: String, _ envelope: Data) throws -> Void) throws {
        switch records {
        case .table(let table, let compression):
            try sql.forEachRow("SELECT seq, topic, envelope FROM \(table) WHERE seq > ? ORDER BY seq LIMIT ?",
                               [.integer(seq), .integer(Int64(limit))]) { row in
                try row.withBytes(2) { stored in
                    var envelope = Data()
                    if let compression { try compression.expand(stored, into: &envelope) } else { envelope.append(contentsOf: stored) }
                    try body(row.integer(0) ?? 0, row.text(1) ?? "", envelope)
                }
            }
        case .file(let file):
            var left = limit
            guard left > 0 else { return }
            try file.forEach(after: seq, through: lastSeq) { seq, topic, envelope in
                try body(seq, String(decoding: topic, as: UTF8.self), Data(envelope))
                left -= 1
                return left > 0
            }
        }
    }

    /// `events.since` reply bytes: the envelopes exactly as they were published. With a
    /// `user`, only the events whose topic names that user (`<type>.<user>.` of a type `publisher`
    /// publishes), filtered before the limit applies.
    public func since(_ request: EventsSinceRequest, for user: UserID?, publisher: ServiceName, in sql: StoreConnection) throws -> Data {
        let prefixes = user.map { user in Events.published(by: publisher).map { $0.prefix(userId: user) } }
        var payload = Data(#"{"events":["#.utf8)
        switch records {
        case .table(let table, let compression):
            try appendEnvelopes(request, table: table, compression: compression, prefixes: prefixes, in: sql, to: &payload)
        case .file(let file):
            let prefixes = prefixes?.map { Array($0.utf8) }
            var left = request.limit
            guard left > 0 else { break }
            try file.forEach(after: request.after, through: lastSeq) { _, topic, envelope in
                if let prefixes, !prefixes.contains(where: { topic.starts(with: $0) }) { return true }
                if left < request.limit { payload.append(UInt8(ascii: ",")) }
                payload.append(contentsOf: envelope)
                left -= 1
                return left > 0
            }
        }
        payload.append(contentsOf: Array(#"],"lastSeq":\#(lastSeq),"logId":"\#(identity)"}"#.utf8))
        return payload
    }

    /// The envelopes `since` returns, from a table.
    private func appendEnvelopes(_ request: EventsSinceRequest, table: String, compression: StoredEnvelopes?, prefixes: [String]?,
                                 in sql: StoreConnection, to payload: inout Data) throws {
        var query = "SELECT envelope FROM \(table) WHERE seq > ?"
        var arguments: [SQLValue] = [.integer(request.after)]
        if let prefixes {
            // SQLite: GLOB, not LIKE, since `_` (allowed in a userId) is a LIKE wildcard; a userId has
            // no GLOB metacharacters. PostgreSQL has a prefix test of its own.
            let test = sql.dialect == .sqlite ? "topic GLOB ?" : "starts_with(topic, ?)"
            query += " AND (" + Array(repeating: test, count: prefixes.count).joined(separator: " OR ") + ")"
            arguments += prefixes.map { .text(sql.dialect == .sqlite ? $0 + "*" : $0) }
        }
        query += " ORDER BY seq LIMIT ?"
        arguments.append(.integer(Int64(request.limit)))
        try sql.appendJSONArrayElements(query, arguments, to: &payload, storedBy: compression)
    }
}
