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

/// A request as a handler sees it: its frame, and the transaction it runs in.
public struct Request {
    public let head: RequestHead
    public let frame: Data
    public let tx: Transaction

    public var op: String { head.op }

    /// The op's payload; a failure names the offending field (`data.start`).
    public func decode<Payload: Decodable>(_ type: Payload.Type) throws(WireError) -> Payload {
        try decodeRequestData(type, from: frame, head: head)
    }
}

/// The shared shell of every service: the api ROUTER, the events PUB, the SQLite store with its
/// outbox, and one loop on one thread that owns all of them.
public final class ServiceHost {
    public typealias Handler = (Request) throws -> Data

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
    private var handlers: [String: Handler] = [:]
    private var watched: [(socket: Socket, onReadable: () -> Void)] = []
    private let startedAt = Date()
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
        configuration.prepareDatabase { db in
            // WAL with synchronous=FULL: a commit is on disk before its ack, and readers never block the writer.
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL")
        }
        database = try DatabaseQueue(path: dataDirectory.appendingPathComponent("\(name).sqlite").path, configuration: configuration)
        var migrator = DatabaseMigrator()
        EventLog.migrate(&migrator)
        migrations(&migrator)
        try migrator.migrate(database)
        eventLog = try EventLog(source: name, database: database)

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

    /// Registers an op. The handler returns the reply's `data` as JSON bytes.
    public func handle(_ op: String, _ handler: @escaping Handler) { handlers[op] = handler }

    /// Adds a socket to the loop's poll; `onReadable` runs on the loop thread when it has input.
    public func watch(_ socket: Socket, _ onReadable: @escaping () -> Void) { watched.append((socket, onReadable)) }

    /// Runs `body` in one write transaction; its events are published and its commit actions run
    /// only after it commits.
    @discardableResult
    public func write<T>(_ body: (Transaction) throws -> T) throws -> T {
        let now = time.now()
        var transaction: Transaction!
        let result = try database.write { db -> T in
            transaction = Transaction(db: db, eventLog: eventLog, now: now)
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
            try api.send(multipart: frames.dropLast() + [reply], dontWait: true)
        }
    }

    /// Runs request frames in one transaction (one savepoint each) and returns their reply frames.
    /// `allowedOps` narrows what a channel may ask (the intake takes only the two log ops).
    public func process(_ frames: [Data], allowedOps: Set<String>? = nil) -> [Data] {
        do {
            return try write { tx in frames.map { respond(to: $0, in: tx, allowedOps: allowedOps) } }
        } catch {
            logger.error("batch transaction failed", metadata: ["error": "\(error)"])
            return Array(repeating: Reply.failure(WireError(.internal, "the request could not be stored")), count: frames.count)
        }
    }

    private func respond(to frame: Data, in tx: Transaction, allowedOps: Set<String>?) -> Data {
        do {
            let head = try RequestHead(frame: frame)
            guard let handler = handlers[head.op], allowedOps?.contains(head.op) ?? true else {
                throw WireError(.unknownOp, "\(name) has no op \"\(head.op.prefix(60))\"", field: "op")
            }
            let data = try tx.isolated { try handler(Request(head: head, frame: frame, tx: tx)) }
            return Reply.success(rawData: data)
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
