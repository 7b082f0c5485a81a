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

    func published(through seq: Int64) { publishedSeq = seq }

    /// The seq an upstream feed was applied through, and the identity of the log those seqs are of.
    static func cursor(_ upstream: String, in db: Database) throws -> (seq: Int64, logId: RecordID?) {
        let row = try db.fetchRow("SELECT seq, log_id FROM cursor WHERE upstream = ?", arguments: [upstream])
        return (row?["seq"] ?? 0, (row?["log_id"] as String?).flatMap(RecordID.init))
    }

    /// `events.since` reply bytes: the stored envelopes exactly as they were published. With a
    /// `user`, only the events whose topic names that user (`<type>.<user>.` of a type `publisher`
    /// publishes), filtered before the limit applies.
    func since(_ request: EventsSinceRequest, for user: UserID?, publisher: ServiceName, in db: Database) throws -> Data {
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

/// An event stored in this transaction, to be published once it commits.
public struct PendingEvent: Sendable {
    public let type: String
    public let seq: Int64
    public let topic: String
    public let envelope: Data
}

/// One write transaction: the database, the events it appends, and what to do once it commits.
///
/// A service changes its in-memory state either in `afterCommit`, or at once with an `onRollback`
/// that undoes it (so later requests of the same batch see it): a rolled-back request leaves
/// neither the database nor memory changed.
public final class Transaction {
    public let db: Database
    public let now: Instant
    private let eventLog: EventLog
    private(set) var events: [PendingEvent] = []
    private(set) var commitActions: [() -> Void] = []
    private var undoActions: [() -> Void] = []

    init(db: Database, eventLog: EventLog, now: Instant) {
        self.db = db
        self.eventLog = eventLog
        self.now = now
    }

    /// The seq the next `append` in this transaction gets, for payloads that carry their own seq.
    public var nextSeq: Int64 { (events.last?.seq ?? eventLog.lastSeq) + 1 }

    /// Stores an event in the outbox and returns its seq.
    @discardableResult
    public func append<Payload>(_ type: EventType<Payload>, userId: UserID, activity: Activity, data: Payload) throws -> Int64 {
        try append(type, userId: userId, activity: activity, encodedData: wireEncoder().encode(data))
    }

    /// As `append(data:)`, for payloads that write their own JSON (every event the hot paths store),
    /// written straight into the envelope.
    @discardableResult
    public func append<Payload: WireJSONWritable>(_ type: EventType<Payload>, userId: UserID, activity: Activity, data: Payload) throws -> Int64 {
        try store(type.name, topic: type.topic(userId: userId, activity: activity).description) { seq, topic in
            EventEnvelope<Payload>.frame(type: type.name, seq: seq, time: now, source: eventLog.source, topic: topic, data: data)
        }
    }

    /// As `append(data:)`, with `data` encoded already (`wireEncoder().encode` of a `Payload`): for a
    /// handler that replies with the same JSON and encodes it once.
    @discardableResult
    public func append<Payload>(_ type: EventType<Payload>, userId: UserID, activity: Activity, encodedData: Data) throws -> Int64 {
        try store(type.name, topic: type.topic(userId: userId, activity: activity).description) { seq, topic in
            EventEnvelope<Payload>.frame(type: type.name, seq: seq, time: now, source: eventLog.source, topic: topic, encodedData: encodedData)
        }
    }

    /// Stores the envelope `frame` makes for the next seq in the outbox, to be published once this commits.
    private func store(_ type: String, topic: String, frame: (_ seq: Int64, _ topic: String) -> Data) throws -> Int64 {
        let seq = nextSeq
        let bytes = frame(seq, topic)
        try RawStatement.execute("INSERT INTO outbox (seq, topic, envelope) VALUES (?, ?, ?)", db, [.integer(seq), .text(topic), .blob(bytes)])
        events.append(PendingEvent(type: type, seq: seq, topic: topic, envelope: bytes))
        return seq
    }

    public func afterCommit(_ action: @escaping () -> Void) { commitActions.append(action) }

    /// Undoes an in-memory change made during this transaction if the change's savepoint or the
    /// whole transaction rolls back; undo actions run newest first.
    public func onRollback(_ undo: @escaping () -> Void) { undoActions.append(undo) }

    /// Runs `body` in a savepoint: if it throws, its rows, events and commit actions are all undone.
    public func isolated<T>(_ body: () throws -> T) throws -> T {
        let eventCount = events.count, actionCount = commitActions.count, undoCount = undoActions.count
        // Cached statements, not GRDB's inSavepoint, which parses its SQL anew each time (a tenth
        // of a session.log). Savepoints of one name nest: each statement acts on the innermost.
        try db.run("SAVEPOINT request")
        do {
            let result = try body()
            try db.run("RELEASE SAVEPOINT request")
            return result
        } catch {
            // ROLLBACK TO keeps the savepoint open, so it is released too. Either fails only when
            // SQLite already rolled the whole transaction back (a full disk), which its commit reports.
            try? db.run("ROLLBACK TO SAVEPOINT request")
            try? db.run("RELEASE SAVEPOINT request")
            events.removeSubrange(eventCount...)
            commitActions.removeSubrange(actionCount...)
            rollBack(from: undoCount)
            throw error
        }
    }

    /// Runs `body` for each item in order, isolated from one another: all in one savepoint while none
    /// fails (a savepoint per item costs about as much as a small item). A failure rolls that back;
    /// the items before it run again together, the failing one in a savepoint of its own (its result
    /// is its error), and the rest go on the same way, so each item runs at most twice. An error
    /// `isFatal` calls one the transaction cannot go on from ends it all.
    public func eachIsolated<Item, Value>(_ items: [Item], isFatal: (Error) -> Bool,
                                          _ body: (Item) throws -> Value) throws -> [Result<Value, Error>] {
        func alone(_ item: Item) throws -> Result<Value, Error> {
            do {
                return .success(try isolated { try body(item) })
            } catch {
                if isFatal(error) { throw error }
                return .failure(error)
            }
        }
        var results: [Result<Value, Error>] = []
        while results.count < items.count {
            let rest = items[results.count...]
            var values: [Value] = []
            do {
                try isolated { for item in rest { values.append(try body(item)) } }
                results += values.map { .success($0) }
            } catch {
                if isFatal(error) { throw error }
                let passed = rest.prefix(values.count)
                if let again = try? isolated({ try passed.map(body) }) {
                    results += again.map { .success($0) }
                } else {
                    results += try passed.map(alone)
                }
                results.append(try alone(rest[rest.startIndex + values.count]))
            }
        }
        return results
    }

    /// Runs the undo actions registered since `index`, newest first, and forgets them.
    func rollBack(from index: Int = 0) {
        for undo in undoActions[index...].reversed() { undo() }
        undoActions.removeSubrange(index...)
    }

    /// Records the seq an upstream feed was applied through, beside the state it produced.
    public func setCursor(_ upstream: String, _ seq: Int64, logId: RecordID?) throws {
        try db.run("""
            INSERT INTO cursor (upstream, seq, log_id) VALUES (?, ?, ?)
            ON CONFLICT(upstream) DO UPDATE SET seq = excluded.seq, log_id = excluded.log_id
            """, arguments: [upstream, seq, logId?.description])
    }
}
