import Foundation
import GRDB
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

    init(source: String, database: DatabaseQueue) throws {
        self.source = source
        (lastSeq, identity) = try database.read { db in
            (try db.fetchValue(Int64.self, "SELECT MAX(seq) FROM outbox") ?? 0,
             try db.fetchValue(String.self, "SELECT id FROM log_identity").flatMap(RecordID.init) ?? RecordID())
        }
        publishedSeq = lastSeq
    }

    public static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("outbox") { db in
            // `seq` is assigned by us, never by SQLite, so it cannot be reused after a rollback.
            try db.execute(sql: """
                CREATE TABLE outbox (seq INTEGER PRIMARY KEY NOT NULL, topic TEXT NOT NULL, envelope BLOB NOT NULL);
                CREATE TABLE cursor (upstream TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL);
                """)
        }
        migrator.registerMigration("log identity") { db in
            // A database from before identities gets one now: its history is the one it has.
            try db.execute(sql: """
                CREATE TABLE log_identity (id TEXT NOT NULL);
                ALTER TABLE cursor ADD COLUMN log_id TEXT;
                """)
            try db.execute(sql: "INSERT INTO log_identity (id) VALUES (?)", arguments: [RecordID().description])
        }
    }

    func committed(through seq: Int64) { lastSeq = seq }

    public func published(through seq: Int64) { publishedSeq = seq }

    /// The seq an upstream feed was applied through, and the identity of the log those seqs are of.
    static func cursor(_ upstream: String, table: String, in db: Database) throws -> (seq: Int64, logId: RecordID?) {
        let row = try db.fetchRow("SELECT seq, log_id FROM \(table) WHERE upstream = ?", arguments: [upstream])
        return (row?["seq"] ?? 0, (row?["log_id"] as String?).flatMap(RecordID.init))
    }

    /// `events.since` reply bytes: the stored envelopes exactly as they were published. With a
    /// `user`, only the events whose topic names that user (`<type>.<user>.` of a type `publisher`
    /// publishes), filtered before the limit applies.
    public func since(_ request: EventsSinceRequest, for user: UserID?, publisher: ServiceName, in db: Database) throws -> Data {
        let sql: String
        let arguments: [RawStatement.Value]
        if let user {
            // GLOB, not LIKE: `_` (allowed in a userId) is a LIKE wildcard. A userId has no GLOB metacharacters.
            let prefixes = Events.published(by: publisher).map { $0.prefix(userId: user) + "*" }
            let matches = Array(repeating: "topic GLOB ?", count: prefixes.count).joined(separator: " OR ")
            sql = "SELECT envelope FROM outbox WHERE seq > ? AND (\(matches)) ORDER BY seq LIMIT ?"
            arguments = [.integer(request.after)] + prefixes.map { .text($0) } + [.integer(Int64(request.limit))]
        } else {
            sql = "SELECT envelope FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?"
            arguments = [.integer(request.after), .integer(Int64(request.limit))]
        }
        var payload = Data(#"{"events":["#.utf8)
        // Each envelope copied once, from SQLite's page into the reply: a page is up to 1000 of them.
        var first = true
        try RawStatement.run(sql, db, arguments) { row -> Never? in
            if !first { payload.append(UInt8(ascii: ",")) }
            first = false
            payload.append(contentsOf: row.blob(0))
            return nil
        }
        payload.append(contentsOf: Array(#"],"lastSeq":\#(lastSeq),"logId":"\#(identity)"}"#.utf8))
        return payload
    }
}
