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

/// Where a handler runs (see `ServiceHost.handle`).
public enum Placement: Sendable {
    /// In the batch's transaction, one savepoint per request: group commit, one fsync per batch.
    case batched
    /// In a transaction of its own, for services whose in-memory state (changed in `afterCommit`)
    /// the next request must already see.
    case alone
    /// Outside any transaction: the handler waits on something first (another service, a catch-up)
    /// and must not hold a transaction meanwhile; it calls `write` itself.
    case outside
}

/// The shared shell of every service: the api ROUTER, the events PUB, the SQLite store with its
/// outbox, and one loop on one thread that owns all of them.
public final class ServiceHost {
    /// A registered op: decodes its request, runs, and returns the reply's `data` bytes.
    private struct Operation {
        let info: OpInfo
        let placement: Placement
        let run: (_ frame: Data, _ head: RequestHead, _ tx: Transaction?) throws -> Data
    }

    public let service: ServiceName
    public var name: String { service.rawValue }
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
    /// When the events socket last carried anything; a second of silence sends a heartbeat.
    private var lastPublished = Date.distantPast
    private let checkpointer: WALCheckpointer
    /// Requests read in one turn share one transaction: group commit, one fsync for the batch.
    private let batchLimit = 512

    public init(service: ServiceName, apiEndpoint: String, eventsEndpoint: String, dataDirectory: URL,
                migrations: (inout DatabaseMigrator) -> Void, logger: Logger, time: TimeSource = SystemTime(),
                context: Context? = nil) throws {
        self.service = service
        self.logger = logger
        self.time = time
        self.context = try context ?? Context()
        _ = try DataDirectory.prepared(dataDirectory.path)
        var configuration = Configuration()
        // The checkpointer's connection can hold a lock for a moment: wait, do not fail.
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // WAL with synchronous=FULL: a commit is on disk before its ack, and readers never block the
            // writer. Checkpoints are not this connection's job (see WALCheckpointer).
            try db.execute(sql: "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0")
        }
        let path = dataDirectory.appendingPathComponent("\(service.rawValue).sqlite").path
        try DataDirectory.createPrivateFile(path)
        database = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        EventLog.migrate(&migrator)
        migrations(&migrator)
        try migrator.migrate(database)
        eventLog = try EventLog(source: service.rawValue, database: database)
        checkpointer = try WALCheckpointer(path: path)

        api = try Socket(self.context, .router)
        try api.setMaxMessageSize(bytes: 16 << 20)
        try api.setReceiveHighWaterMark(100_000)
        try api.setSendHighWaterMark(100_000)
        self.apiEndpoint = try api.bind(apiEndpoint)
        publisher = try Socket(self.context, .pub)
        try publisher.setSendHighWaterMark(100_000)
        self.eventsEndpoint = try publisher.bind(eventsEndpoint)

        handle(Ops.health) { [unowned self] _, _ in health() }
        handleEncoded(Ops.eventsSince) { [unowned self] query, tx in try eventLog.since(query, in: tx.db) }
    }

    /// Registers the handler of a catalog op this service serves; it gets the decoded request and,
    /// unless placed `.outside`, the transaction it runs in.
    public func handle<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement = .batched,
                                      _ handler: @escaping (Input, Transaction) throws -> Output) {
        handleEncoded(op, placement) { input, tx in try wireEncoder().encode(handler(input, tx)) }
    }

    /// Registers an op placed `.outside` any transaction.
    public func handleOutside<Input, Output>(_ op: Op<Input, Output>, _ handler: @escaping (Input) throws -> Output) {
        register(op, .outside) { input, _ in try wireEncoder().encode(handler(input)) }
    }

    /// As `handle`, for handlers that return the reply's `data` already encoded (stored JSON, sent as it is).
    public func handleEncoded<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement = .batched,
                                             _ handler: @escaping (Input, Transaction) throws -> Data) {
        precondition(placement != .outside, "use handleOutside")
        register(op, placement) { input, tx in try handler(input, tx!) }
    }

    private func register<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement,
                                         _ handler: @escaping (Input, Transaction?) throws -> Data) {
        precondition(op.info.service == nil || op.info.service == service, "\(op.name) is not an op of \(name)")
        operations[op.name] = Operation(info: op.info, placement: placement) { frame, head, tx in
            try handler(decodeRequestData(Input.self, from: frame, head: head), tx)
        }
    }

    /// The ops this service answers, for checks against the catalog.
    public var registeredOps: Set<String> { Set(operations.keys) }

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
        for event in transaction.events { publish(topic: event.topic, event.envelope, seq: event.seq) }
    }

    private func publish(topic: String, _ envelope: Data, seq: Int64?) {
        do {
            try publisher.send(multipart: [Data(topic.utf8), envelope], dontWait: true)
            lastPublished = Date()
        } catch {
            // Stored already: a subscriber that misses it gets it from events.since.
            logger.warning("publish failed", metadata: ["topic": "\(topic)", "seq": "\(seq.map(String.init) ?? "-")", "error": "\(error)"])
        }
    }

    /// The zguide's Clone heartbeat: after a second of silence, the newest seq, so followers notice
    /// a gap or a silent publisher without polling.
    private func heartbeatIfQuiet() {
        guard Date().timeIntervalSince(lastPublished) * 1000 >= Double(Heartbeat.intervalMilliseconds) else { return }
        let beat = Heartbeat(source: name, lastSeq: eventLog.lastSeq, time: time.now())
        guard let frame = try? wireEncoder().encode(beat) else { return }
        publish(topic: Heartbeat.topic, frame, seq: nil)
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
                heartbeatIfQuiet()
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
    public func process(_ frames: [Data], allowedOps: [OpInfo]? = nil) -> [Data] {
        var replies = [Data](repeating: Data(), count: frames.count)
        var batch: [(index: Int, frame: Data, head: RequestHead, operation: Operation)] = []

        func runBatch() {
            guard !batch.isEmpty else { return }
            do {
                let results = try write { tx in
                    batch.map { entry in reply { try tx.isolated { try entry.operation.run(entry.frame, entry.head, tx) } } }
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
            do throws(WireError) {
                head = try RequestHead(frame: frame)
                guard let found = operations[head.op], allowedOps?.contains(found.info) ?? true else {
                    throw WireError(.unknownOp, "\(name) has no op \"\(head.op.prefix(60))\"", field: "op")
                }
                operation = found
            } catch {
                replies[index] = Reply.failure(error)
                continue
            }
            switch operation.placement {
            case .batched:
                batch.append((index, frame, head, operation))
            case .alone:
                runBatch()
                replies[index] = reply { try write { tx in try operation.run(frame, head, tx) } }
            case .outside:
                runBatch()
                replies[index] = reply { try operation.run(frame, head, nil) }
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

    private func health() -> HealthReply {
        HealthReply(service: name, version: version, uptimeSeconds: Int64(Date().timeIntervalSince(startedAt)),
                    lastSeq: eventLog.lastSeq, counters: counters)
    }
}

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
