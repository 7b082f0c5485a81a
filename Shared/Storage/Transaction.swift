import Foundation
import LHTSchema

/// An event stored in this transaction, to be published once it commits.
public struct PendingEvent: Sendable {
    public let type: String
    public let seq: Int64
    public let topic: String
    public let envelope: Data
    /// The envelope's data as a reader decodes it, where the store applies it to a projection
    /// behind the log (`Transaction.projectionLags`): that thread need not decode the envelope again.
    public var data: EventData? = nil

    package init(type: String, seq: Int64, topic: String, envelope: Data, data: EventData? = nil) {
        self.type = type
        self.seq = seq
        self.topic = topic
        self.envelope = envelope
        self.data = data
    }
}

/// A read behind the log (`Transaction.readBehindTheLog`): it sees the events through `seq`.
public struct PointRead {
    package let seq: Int64
    package let body: (StoreConnection) throws -> Data
    package let answer: (Result<Data, Error>) -> Void
}

/// One write transaction: the database, the events it appends, and what to do once it commits.
///
/// A service changes its in-memory state either in `afterCommit`, or at once with an `onRollback`
/// that undoes it (so later requests of the same batch see it): a rolled-back request leaves
/// neither the database nor memory changed.
public final class Transaction {
    /// The backend's connection: what a store's statements run on. Where every table is behind the
    /// log, any statement on it throws.
    public let sql: StoreConnection
    /// Which tables this transaction's statements reach.
    public let tables: TransactionTables
    /// False where every table is behind the log (`TransactionTables.allBehindTheLog`).
    public var hasTables: Bool {
        if case .allBehindTheLog = tables { false } else { true }
    }
    /// Whether some tables are behind the log: this transaction does not write them, its events do
    /// once it commits; `readTables` reads them.
    public var projectionLags: Bool {
        if case .all = tables { false } else { true }
    }
    public let now: Instant
    /// Who the log's envelopes name as their source.
    private let source: String
    /// The newest seq committed before this transaction: its events get the seqs after it.
    private var baseSeq: Int64
    /// Where the store learns `baseSeq` only with the transaction's first answer (PostgreSQL's log
    /// row lock, sent with the body's first read): asked for it before an event gets a seq.
    package var awaitingBaseSeq: (() throws -> Int64)?
    /// Set by a store that sends the whole transaction with its COMMIT, in one round trip: it
    /// numbers the events from the log's head as it last saw it, and the body queues expectations
    /// (`StoreConnection.expectLater`) where it would wait for a read, taking memory's answer. Then
    /// any failure, an expectation the database did not meet or the body's own, fails the whole
    /// transaction (no savepoints: `isolated` passes its error on as `ExpectationUnmet`), and the
    /// store runs the body again the usual way.
    public package(set) var expectsInsteadOfReading = false
    /// Run before each item of `eachIsolated`: the host answers `health` there when a long batch
    /// (a backlog of upstream events, a full batch of requests) keeps its loop from the api.
    public var betweenItems: (() -> Void)?
    /// Stores one record: (seq, topic, envelope), for `storeRecords`, as `INSERT … VALUES (?, ?, ?)`,
    /// which `storeRecords` extends by more rows; nil where the store writes the events itself once
    /// the body ran (`EventFileStore`).
    private let insertRecord: String?
    /// How the log stores an envelope, where not as it is: compressed ahead while the body appends.
    private let compression: StoringAhead?
    public private(set) var events: [PendingEvent] = []
    /// Reads asked for behind the log, each at its point among `events`: handed over with them when
    /// this commits, dropped when it does not.
    public private(set) var pointReads: [PointRead] = []
    package private(set) var commitActions: [() -> Void] = []
    private var undoActions: [() -> Void] = []

    /// Where upstream cursors are kept.
    private let cursorTable: String

    package init(_ tables: TransactionTables, source: String, baseSeq: Int64, insertRecord: String?,
                 compression: StoredEnvelopes? = nil, now: Instant, cursorTable: String) {
        switch tables {
        case .all(let sql), .someBehindTheLog(let sql, _): self.sql = sql
        case .allBehindTheLog: sql = NoTables()
        }
        self.tables = tables
        self.source = source
        self.baseSeq = baseSeq
        self.insertRecord = insertRecord
        self.compression = insertRecord == nil ? nil : compression?.storingAhead()
        self.now = now
        self.cursorTable = cursorTable
    }

    /// Room for `count` more events at once, for a transaction about to append many (a planner's
    /// step): grown by doubling instead, the array copied its events again and again, into new pages.
    public func reserveCapacity(forEvents count: Int) { events.reserveCapacity(events.count + count) }

    /// The seq the next `append` in this transaction gets, for payloads that carry their own seq.
    public var nextSeq: Int64 {
        // A failure here fails the commit too: it is the lock's, or the connection's.
        if awaitingBaseSeq != nil { try? settleBaseSeq() }
        return (events.last?.seq ?? baseSeq) + 1
    }

    private func settleBaseSeq() throws {
        guard let awaiting = awaitingBaseSeq else { return }
        awaitingBaseSeq = nil
        baseSeq = try awaiting()
    }

    /// Stores an event in the outbox and returns its seq.
    @discardableResult
    public func append<Payload>(_ type: EventType<Payload>, userId: UserID, activity: Activity, data: Payload) throws -> Int64 {
        try append(type, userId: userId, activity: activity, encodedData: WireJSON.encode(data))
    }

    /// As `append(data:)`, for payloads that write their own JSON (every event the hot paths store),
    /// written straight into the envelope.
    @discardableResult
    public func append<Payload: WireJSONWritable & CatalogPayload>(_ type: EventType<Payload>, userId: UserID, activity: Activity,
                                                                  data: Payload) throws -> Int64 {
        let seq = try store(type.name, topic: type.topic(userId: userId, activity: activity).description) { seq, topic in
            EventEnvelope<Payload>.frame(type: type.name, seq: seq, time: now, source: source, topic: topic, data: data)
        }
        if projectionLags { events[events.count - 1].data = data.eventData }
        return seq
    }

    /// As `append(data:)`, with `data` encoded already (`WireJSON.encode` of a `Payload`): for a
    /// handler that replies with the same JSON and encodes it once.
    @discardableResult
    public func append<Payload>(_ type: EventType<Payload>, userId: UserID, activity: Activity, encodedData: Data) throws -> Int64 {
        try store(type.name, topic: type.topic(userId: userId, activity: activity).description) { seq, topic in
            EventEnvelope<Payload>.frame(type: type.name, seq: seq, time: now, source: source, topic: topic, encodedData: encodedData)
        }
    }

    /// Makes the envelope `frame` makes for the next seq: stored in the log by `storeRecords`, and
    /// published once this commits.
    private func store(_ type: String, topic: String, frame: (_ seq: Int64, _ topic: String) -> Data) throws -> Int64 {
        try settleBaseSeq()
        let seq = nextSeq
        let envelope = frame(seq, topic)
        events.append(PendingEvent(type: type, seq: seq, topic: topic, envelope: envelope))
        compression?.append(envelope)
        return seq
    }

    /// Writes the events appended into the log's table, for the store to call once the body ran: all
    /// at the end, so that a transaction of many (a planner's step of decisions) compresses them on
    /// two cores (`StoringAhead`), not one by one on the loop at each append
    /// (docs/decisions/0006-zstd-envelope-dictionary.md). A savepoint that rolled back took its
    /// events out of `events` before they got here.
    ///
    /// Up to `recordsPerInsert` rows a statement: a statement a row cost as much in setting it up
    /// (SQLite's cache lookup, binding and reset; PostgreSQL's bind and execute) as in its insert.
    /// A write of a few rows (a session's cancellations) takes one statement of exactly that many;
    /// a longer one goes by powers of two, so there are few statements to cache or prepare.
    package func storeRecords() throws {
        guard let insertRecord, !events.isEmpty else { return }
        let envelopes = events.map(\.envelope)
        let stored = compression?.finish(envelopes) ?? envelopes
        var start = 0
        while start < events.count {
            let rows = Self.rowsPerStatement(events.count - start)
            var arguments: [SQLValue] = []
            arguments.reserveCapacity(3 * rows)
            for index in start..<(start + rows) {
                arguments += [.integer(events[index].seq), .text(events[index].topic), .blob(stored[index])]
            }
            try sql.executeLater(rows == 1 ? insertRecord : insertRecord + String(repeating: ", (?, ?, ?)", count: rows - 1), arguments)
            start += rows
        }
    }

    /// The most log rows one statement stores (192 parameters, well within SQLite's 32,766 and
    /// PostgreSQL's 65,535).
    static let recordsPerInsert = 64

    /// Up to this many rows go in one statement of exactly that many.
    static let exactRowsUpTo = 16

    /// `remaining` up to `exactRowsUpTo`, else the largest power of two up to `recordsPerInsert` and `remaining`.
    static func rowsPerStatement(_ remaining: Int) -> Int {
        if remaining <= exactRowsUpTo { return remaining }
        let rows = min(remaining, recordsPerInsert)
        return 1 << (Int.bitWidth - 1 - rows.leadingZeroBitCount)
    }

    /// Runs `body` on the tables a projection applies behind the log, where one does (`projectionLags`):
    /// once they hold every event committed before this transaction (waiting for them), without this
    /// transaction's own events. Elsewhere on this transaction's own connection.
    public func readTables<T>(_ body: (StoreConnection) throws -> T) throws -> T {
        let read: ReadingBehindTheLog
        switch tables {
        case .all: return try body(sql)
        case .someBehindTheLog(_, let reading), .allBehindTheLog(let reading): read = reading
        }
        var result: T?
        try read { result = try body($0) }
        return result!
    }

    public func afterCommit(_ action: @escaping () -> Void) { commitActions.append(action) }

    /// For a store whose tables are applied behind the log (`Store.readsBehindTheLog`): once this
    /// commits, `body` reads them as they are with exactly the events appended so far (of this
    /// transaction and those before), off the loop, and `answer` gets its result on the loop.
    public func readBehindTheLog(_ body: @escaping (StoreConnection) throws -> Data, answer: @escaping (Result<Data, Error>) -> Void) {
        pointReads.append(PointRead(seq: nextSeq - 1, body: body, answer: answer))
    }

    /// After COMMIT, for the store that ran it: the log holds its events, and its commit actions run.
    package func didCommit(into log: EventLog) {
        if let last = events.last { log.committed(through: last.seq) }
        for action in commitActions { action() }
    }

    /// Undoes an in-memory change made during this transaction if the change's savepoint or the
    /// whole transaction rolls back; undo actions run newest first.
    public func onRollback(_ undo: @escaping () -> Void) { undoActions.append(undo) }

    /// Runs `body` in a savepoint: if it throws, its rows, events and commit actions are all undone.
    /// Not where the transaction expects instead of reading: there a failure ends it all.
    public func isolated<T>(_ body: () throws -> T) throws -> T {
        if expectsInsteadOfReading {
            do { return try body() } catch { throw error as? ExpectationUnmet ?? ExpectationUnmet(cause: error) }
        }
        let eventCount = events.count, readCount = pointReads.count, actionCount = commitActions.count, undoCount = undoActions.count
        // Cached statements, not GRDB's inSavepoint, which parses its SQL anew each time
        // (docs/decisions/0016-planner-deciding-loop.md). Savepoints of one name nest: each
        // statement acts on the innermost.
        // RELEASE waits for its result while a statement of the body sent later (`executeLater`) is
        // still to go out: that one fails here, inside the savepoint, not in whatever statement of
        // the transaction comes next. With none waiting that may fail alone, it may wait too.
        if hasTables { try sql.executeLaterFailingOnlyWithTheTransaction("SAVEPOINT request", []) }
        do {
            let result = try body()
            if hasTables {
                if sql.hasStatementsWaitingThatMayFail { try sql.execute("RELEASE SAVEPOINT request", []) } else { try sql.executeLaterFailingOnlyWithTheTransaction("RELEASE SAVEPOINT request", []) }
            }
            return result
        } catch {
            // ROLLBACK TO keeps the savepoint open, so it is released too. Either fails only when
            // SQLite already rolled the whole transaction back (a full disk), which its commit reports.
            if hasTables {
                try? sql.execute("ROLLBACK TO SAVEPOINT request", [])
                try? sql.execute("RELEASE SAVEPOINT request", [])
            }
            events.removeSubrange(eventCount...)
            compression?.truncate(to: eventCount)
            pointReads.removeSubrange(readCount...)
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
        func run(_ item: Item) throws -> Value {
            betweenItems?()
            return try body(item)
        }
        func alone(_ item: Item) throws -> Result<Value, Error> {
            do {
                return .success(try isolated { try run(item) })
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
                try isolated { for item in rest { values.append(try run(item)) } }
                results += values.map { .success($0) }
            } catch {
                if isFatal(error) { throw error }
                // Every body returned: a statement one sent later (`executeLater`) failed at the release. Alone, each tells which.
                guard values.count < rest.count else {
                    results += try rest.map(alone)
                    continue
                }
                let passed = rest.prefix(values.count)
                if let again = try? isolated({ try passed.map(run) }) {
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
    public func rollBack(from index: Int = 0) {
        for undo in undoActions[index...].reversed() { undo() }
        undoActions.removeSubrange(index...)
    }

    /// Records the seq an upstream feed was applied through, beside the state it produced.
    public func setCursor(_ upstream: String, _ seq: Int64, logId: RecordID?) throws {
        try sql.executeLater("""
            INSERT INTO \(cursorTable) (upstream, seq, log_id) VALUES (?, ?, ?)
            ON CONFLICT(upstream) DO UPDATE SET seq = excluded.seq, log_id = excluded.log_id
            """, [.text(upstream), .integer(seq), .text(logId?.description)])
    }
}

/// A failure in a transaction that expects instead of reading (`Transaction.expectsInsteadOfReading`):
/// it ends the transaction, which the store runs again the usual way.
public struct ExpectationUnmet: StoreOutage, CustomStringConvertible {
    public let cause: Error
    public init(cause: Error) { self.cause = cause }
    public var outage: (label: String, message: String)? { (cause as? StoreOutage)?.outage }
    public var endsTransaction: Bool { true }
    public var description: String { "\(cause)" }
}
