import Foundation
import GRDB
import LHTSchema
import Logging
import ZeroMQ

/// Where "now" comes from. The planner can run on a manual clock; everything else reads the system.
public protocol TimeSource: AnyObject {
    func now() -> Instant
}

public final class SystemTime: TimeSource {
    public init() {}
    public func now() -> Instant { Instant.now() }
}

/// A request whose envelope has been checked: its op and its frame.
public protocol IncomingRequest {
    var head: RequestHead { get }
    var frame: Data { get }
}

extension IncomingRequest {
    public var op: String { head.op }

    /// The op's payload; a failure names the offending field (`data.start`).
    public func decode<Payload: Decodable>(_ type: Payload.Type) throws(WireError) -> Payload {
        try decodeRequestData(type, from: frame, head: head)
    }
}

/// A request as a batched handler sees it: it runs inside the batch's transaction.
public struct Request: IncomingRequest {
    public let head: RequestHead
    public let frame: Data
    public let tx: Transaction
}

/// A request for an op that opens its own transactions, because it waits on something first
/// (another service, a catch-up) and must not hold the batch's transaction meanwhile.
public struct Call: IncomingRequest {
    public let head: RequestHead
    public let frame: Data
}

/// The shared shell of every service: the api ROUTER, the events PUB, the SQLite store with its
/// outbox, and one loop on one thread that owns all of them.
public final class ServiceHost {
    public typealias Handler = (Request) throws -> Data
    public typealias CallHandler = (Call) throws -> Data

    private enum Operation {
        case batched(Handler)
        case alone(Handler)
        case ownTransactions(CallHandler)
    }

    public let name: String
    public let version = "1.0.0"
    public let logger: Logger
    public let context: Context
    public let database: DatabaseQueue
    public let eventLog: EventLog
    public let time: TimeSource
    public let apiEndpoint: String
    public let eventsEndpoint: String
    /// Things worth counting for `health`: rejected intake messages, rate-limited notifications, ….
    public var counters: [String: Int64] = [:]
    /// Called after every loop turn; services decide timed work here.
    public var onTick: (() -> Void)?
    /// The next instant the service wants `onTick` called by; the loop sleeps at most until then.
    public var nextDeadline: (() -> Instant?)?

    private let api: Socket
    private let publisher: Socket
    private var operations: [String: Operation] = [:]
    /// The transaction in progress, so a nested `write` joins it instead of deadlocking.
    private var current: Transaction?
    private var watched: [(socket: Socket, onReadable: () -> Void)] = []
    private let startedAt = Date()
    private let checkpointer: WALCheckpointer
    /// Requests read in one turn share one transaction: group commit, one fsync for the batch.
    private let batchLimit = 512

    public init(name: String, apiEndpoint: String, eventsEndpoint: String, dataDirectory: URL,
                migrations: (inout DatabaseMigrator) -> Void, logger: Logger, time: TimeSource = SystemTime(),
                context: Context? = nil) throws {
        self.name = name
        self.logger = logger
        self.time = time
        self.context = try context ?? Context()
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        var configuration = Configuration()
        // The checkpointer's connection can hold a lock for a moment: wait, do not fail.
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // WAL with synchronous=FULL: a commit is on disk before its ack, and readers never block the
            // writer. Checkpoints are not this connection's job (see WALCheckpointer).
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0")
        }
        let path = dataDirectory.appendingPathComponent("\(name).sqlite").path
        database = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        EventLog.migrate(&migrator)
        migrations(&migrator)
        try migrator.migrate(database)
        eventLog = try EventLog(source: name, database: database)
        checkpointer = try WALCheckpointer(path: path)

        api = try Socket(self.context, .router)
        try api.setMaxMessageSize(bytes: 16 << 20)
        try api.setReceiveHighWaterMark(100_000)
        try api.setSendHighWaterMark(100_000)
        self.apiEndpoint = try api.bind(apiEndpoint)
        publisher = try Socket(self.context, .pub)
        try publisher.setSendHighWaterMark(100_000)
        self.eventsEndpoint = try publisher.bind(eventsEndpoint)

        handle("health") { [unowned self] _ in try self.health() }
        handle("events.since") { [unowned self] request in
            let query = try request.decode(EventsSinceRequest.self)
            return try self.eventLog.since(query, in: request.tx.db)
        }
    }

    /// Registers an op that runs in the batch's transaction. The handler returns the reply's `data` as JSON bytes.
    public func handle(_ op: String, _ handler: @escaping Handler) { operations[op] = .batched(handler) }

    /// Registers an op that runs in a transaction of its own, for services whose in-memory state
    /// (changed in `afterCommit`) the next request must already see.
    public func handleAlone(_ op: String, _ handler: @escaping Handler) { operations[op] = .alone(handler) }

    /// Registers an op that runs outside any transaction and calls `write` itself.
    public func handleWithOwnTransactions(_ op: String, _ handler: @escaping CallHandler) { operations[op] = .ownTransactions(handler) }

    /// Adds a socket to the loop's poll; `onReadable` runs on the loop thread when it has input.
    public func watch(_ socket: Socket, _ onReadable: @escaping () -> Void) { watched.append((socket, onReadable)) }

    /// Runs `body` in one write transaction; its events are published and its commit actions run
    /// only after it commits. Inside another `write` it becomes a savepoint of that transaction.
    @discardableResult
    public func write<T>(_ body: (Transaction) throws -> T) throws -> T {
        if let current { return try current.isolated { try body(current) } }
        let now = time.now()
        var transaction: Transaction!
        let result = try database.write { db -> T in
            transaction = Transaction(db: db, eventLog: eventLog, now: now)
            current = transaction
            defer { current = nil }
            return try body(transaction)
        }
        finish(transaction)
        return result
    }

    private func finish(_ transaction: Transaction) {
        if let last = transaction.events.last { eventLog.committed(through: last.seq) }
        for action in transaction.commitActions { action() }
        for event in transaction.events {
            do {
                try publisher.send(multipart: [Data(event.topic.utf8), event.envelope], dontWait: true)
            } catch {
                // Stored already: a subscriber that misses it gets it from events.since.
                logger.warning("publish failed", metadata: ["seq": "\(event.seq)", "error": "\(error)"])
            }
        }
    }

    public func read<T>(_ body: (Database) throws -> T) throws -> T { try database.read(body) }

    public func count(_ counter: String, by amount: Int64 = 1) { counters[counter, default: 0] += amount }

    /// The line a starter waits for.
    public func readyLine(extra: String = "") -> String {
        "ready \(name) api=\(apiEndpoint) events=\(eventsEndpoint)" + (extra.isEmpty ? "" : " " + extra)
    }

    // MARK: The loop

    /// Serves until `shutdown` is requested; the message in hand is finished first.
    public func run(until shutdown: ShutdownSignal) {
        let sockets = [api] + watched.map(\.socket)
        while !shutdown.isRequested {
            var timeout = 100
            if let deadline = nextDeadline?() {
                timeout = max(0, min(timeout, Int(deadline.milliseconds(since: time.now()))))
            }
            do {
                let readable = try Poller.readable(sockets, timeoutMilliseconds: timeout)
                if readable[0] { try serveAPI() }
                for (index, entry) in watched.enumerated() where readable[index + 1] { entry.onReadable() }
                onTick?()
            } catch let error as ZMQError where error.isTerminated {
                break
            } catch {
                logger.error("loop error", metadata: ["error": "\(error)"])
            }
        }
        logger.info("stopping", metadata: ["service": "\(name)"])
    }

    /// Reads every request waiting on the api (up to the batch limit), runs them in one
    /// transaction, then replies to each in order.
    private func serveAPI() throws {
        var batch: [[Data]] = []
        while batch.count < batchLimit, let frames = try api.receiveMultipart(dontWait: true) {
            batch.append(frames)
        }
        guard !batch.isEmpty else { return }
        let replies = process(batch.map { $0.last ?? Data() })
        for (frames, reply) in zip(batch, replies) {
            // Everything before the body is the routing envelope (identity, and the delimiter if any).
            // One reply that cannot go (its client vanished) must not cost the others theirs.
            do {
                try api.send(multipart: frames.dropLast() + [reply], dontWait: true)
            } catch {
                logger.warning("reply not sent", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Runs request frames in order and returns their reply frames. Consecutive batched requests
    /// share one transaction (one savepoint each): group commit. `allowedOps` narrows what a channel
    /// may ask (the intake takes only the two log ops).
    public func process(_ frames: [Data], allowedOps: Set<String>? = nil) -> [Data] {
        var replies = [Data](repeating: Data(), count: frames.count)
        var batch: [(index: Int, request: (Transaction) -> Request, handler: Handler)] = []

        func runBatch() {
            guard !batch.isEmpty else { return }
            do {
                let results = try write { tx in
                    batch.map { entry in reply { try tx.isolated { try entry.handler(entry.request(tx)) } } }
                }
                for (entry, result) in zip(batch, results) { replies[entry.index] = result }
            } catch {
                logger.error("batch transaction failed", metadata: ["error": "\(error)"])
                for entry in batch { replies[entry.index] = Reply.failure(WireError(.internal, "the request could not be stored")) }
            }
            batch.removeAll()
        }

        for (index, frame) in frames.enumerated() {
            let head: RequestHead
            let operation: Operation
            do {
                head = try RequestHead(frame: frame)
                guard let found = operations[head.op], allowedOps?.contains(head.op) ?? true else {
                    throw WireError(.unknownOp, "\(name) has no op \"\(head.op.prefix(60))\"", field: "op")
                }
                operation = found
            } catch let error as WireError {
                replies[index] = Reply.failure(error)
                continue
            } catch {
                replies[index] = Reply.failure(WireError(.internal, "\(error)"))
                continue
            }
            switch operation {
            case .batched(let handler):
                batch.append((index, { Request(head: head, frame: frame, tx: $0) }, handler))
            case .alone(let handler):
                runBatch()
                replies[index] = reply { try write { tx in try handler(Request(head: head, frame: frame, tx: tx)) } }
            case .ownTransactions(let handler):
                runBatch()
                replies[index] = reply { try handler(Call(head: head, frame: frame)) }
            }
        }
        runBatch()
        return replies
    }

    /// A reply frame for what `body` returns or throws; an unexpected error is `internal`, never a crash.
    private func reply(_ body: () throws -> Data) -> Data {
        do {
            return Reply.success(rawData: try body())
        } catch let error as WireError {
            return Reply.failure(error)
        } catch {
            logger.error("request failed", metadata: ["error": "\(error)"])
            return Reply.failure(WireError(.internal, "the request failed inside \(name); it was not applied"))
        }
    }

    private func health() throws -> Data {
        try wireEncoder().encode(HealthReply(
            service: name, version: version, uptimeSeconds: Int64(Date().timeIntervalSince(startedAt)),
            lastSeq: eventLog.lastSeq, counters: counters))
    }
}

/// Encodes a handler's reply payload.
public func replyData<Payload: Encodable>(_ payload: Payload) throws -> Data { try wireEncoder().encode(payload) }

/// Copies the write-ahead log back into the database file from a connection and thread of its own.
///
/// Left to the writer, SQLite checkpoints inside a commit every 1,000 pages: that commit, and the
/// requests waiting behind it, took tens of milliseconds (the p99 of `session.log` acks went from
/// 2 ms to 25 ms). A passive checkpoint never blocks the writer.
final class WALCheckpointer {
    private let timer: DispatchSourceTimer

    init(path: String, every interval: DispatchTimeInterval = .milliseconds(200)) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "wal-checkpoint", qos: .utility))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler {
            _ = try? database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") }
        }
        timer.resume()
        self.timer = timer
    }

    deinit { timer.cancel() }
}
