import DequeModule
import Foundation
import GRDB
import LHTClient
import LHTSchema
import LHTSecurity
import Logging
import Storage
import Synchronization
import ZeroMQ

/// Where "now" comes from. The planner can run on a manual clock; everything else reads the system.
public protocol TimeSource: AnyObject {
    func now() -> Instant
}

public final class SystemTime: TimeSource {
    public init() {}
    public func now() -> Instant { Instant.now() }
}

/// The shared shell of every service: the api ROUTER, the events XPUB, the store with its log
/// (`Storage`), and one loop on one thread that owns all of them. Requests are handled in
/// `ServiceHost+Requests.swift`; who may do what comes from the catalog (`Access`).
public final class ServiceHost {
    public let service: ServiceName
    public var name: String { service.rawValue }
    public let version = "1.0.0"
    public let logger: Logger
    public let context: Context
    /// SQLite in the data directory, or PostgreSQL with `--database` (README "Storage").
    public let store: any Store
    public var eventLog: EventLog { store.eventLog }
    /// Replies and events wait in it for the commit they tell of to be on disk.
    var commits: Durability { store.durability }
    public let time: TimeSource
    public private(set) var apiEndpoint = ""
    public var eventsEndpoint: String { events.endpoint ?? "" }
    /// The keys this service runs with; nil: plaintext on loopback.
    public var securitySettings: SecuritySettings? { security?.settings }
    /// Things worth counting for `health`: rejected intake messages, rate-limited notifications, ….
    public private(set) var counters: [String: Int64] = [:]
    /// What `countFromAnyThread` counted and the loop has not added to `counters` yet.
    private let countedOffLoop = Mutex<[String: Int64]>([:])
    /// Whether followers adopt an upstream's new history instead of halting (`--accept-upstream-reset`).
    public var acceptUpstreamReset = false
    /// Called after every loop turn; services decide timed work here.
    public var onTick: (() -> Void)?
    /// The next instant the service wants `onTick` called by; the loop sleeps at most until then.
    public var nextDeadline: (() -> Instant?)?
    /// The tzdata version for `health`, for a service whose answers depend on zone rules.
    public var tzdataVersion: (() -> String)?
    /// Whether the service's time-driven work is shared by partitions (`StoreLayout.partitioned`):
    /// then `health.owns` tells this instance's share.
    let sharesWorkByPartitions: Bool
    /// When (uptime nanoseconds) this instance last balanced its partitions without an error,
    /// which proves its leases are still held: `health.owns.leaseAgeSeconds` (`ServiceHost+Ownership`).
    var leasesConfirmedAt: UInt64?
    var ownershipMetricsSynced: UInt64 = 0
    /// Runs first in every write transaction (not in a nested one): where the store is shared, the
    /// service brings its memory up to what other instances committed, under the log row's lock.
    public var beforeWriting: ((Transaction) throws -> Void)?
    private var isWriting = false
    /// This instance's name (`--instance`) for `health`; nil for a host not started from flags.
    public var instance: String?

    let api: Socket
    let events: EventSocket
    let security: SocketSecurity?
    let metrics = HostMetrics()
    var operations: [String: Operation] = [:]
    private var watched: [(socket: Socket, onReadable: () -> Void)] = []
    private var feeds: [UpstreamFeed] = []
    /// Requests to other services in flight (`UpstreamClient`): polled by the loop, never waited for.
    let exchanges = PendingExchanges()
    private let startedAt = Date()
    private var lastError: String?
    /// Refusals already logged, by key and reason: a misbehaving client must not flood the log.
    private var refusalsLogged: [String: Date] = [:]
    private var refusalsSynced = Date.distantPast
    /// When each server socket's closed connections were last logged (`connectionClosed`).
    var closesLogged: [String: Date] = [:]
    /// The seq the last heartbeat announced: on a log that instances share, what any of them
    /// committed a second ago at most, which `health` reports without asking the database.
    private var announcedSeq: Int64 = 0
    /// Whether `run` is serving: the loop thread is the caller, and requests can be answered meanwhile.
    private(set) var isServing = false
    /// Requests read but not yet run: gathered for a turn (`groupCommit`), or read while the loop
    /// answered only `health`.
    var held = Deque<(envelope: [Data], request: IncomingRequest)>()
    var heldBytes = 0
    /// How long requests read under load wait for others to share their turn's transaction and sync;
    /// the store says how long (`Store.groupCommitNanoseconds`): why, in bytes per record against ack
    /// latency, README "Group commit under load".
    public var groupCommit: GroupCommit

    /// `database`: a PostgreSQL URL, or nil for SQLite in `dataDirectory`.
    public init(service: ServiceName, apiEndpoint: String, eventsEndpoint: String, dataDirectory: URL, database: String? = nil,
                layout: StoreLayout, logger: Logger, time: TimeSource = SystemTime(),
                security: SecuritySettings? = nil, walLimit: Int64 = WALCheckpointer.defaultLimit, context: Context? = nil) throws {
        self.service = service
        self.logger = logger
        self.time = time
        sharesWorkByPartitions = layout.partitioned
        let context = try context ?? Context()
        self.context = context
        if let database {
            guard let migrations = layout.postgresMigrations else {
                throw StoreConfigurationError(description: "\(service.rawValue) does not run on PostgreSQL yet: start it without --database")
            }
            store = try PostgresStore(url: database, service: service.rawValue, migrations: migrations, partitioned: layout.partitioned,
                                      logger: logger, keepTrying: { !ShutdownSignal.process.isRequested })
        } else {
            _ = try DataDirectory.prepared(dataDirectory.path)
            if layout.logOnly, let projection = layout.projection {
                store = try EventFileStore(directory: dataDirectory, name: service.rawValue, sqliteMigrations: layout.sqliteMigrations,
                                           projection: projection, logger: logger)
            } else {
                store = try SQLiteStore(directory: dataDirectory, name: service.rawValue, migrations: layout.sqliteMigrations,
                                        projection: layout.projection, behindTheLog: layout.behindTheLog, logger: logger, walLimit: walLimit)
            }
        }

        groupCommit = GroupCommit(windowNanoseconds: store.groupCommitNanoseconds)
        // The ZAP handler first: a CURVE server bound before it would let anyone in.
        self.security = try security.map { try SocketSecurity($0, context: context, logger: logger) }
        api = try Socket(context, .router)
        try api.setReceiveHighWaterMark(100_000)
        try api.setSendHighWaterMark(100_000)
        events = try EventSocket(context: context, service: service)
        metrics.eventLog(lastSeq: eventLog.lastSeq)
        // Every refusal reason exists from the start at 0, so an alert's rate() has a series to read.
        for reason in ["request", "subscription"] + ZAPHandler.Refusal.allCases.map(\.rawValue) { metrics.authRefused(reason, by: 0) }

        try serve(api, role: "api", takingRequests: true)
        self.apiEndpoint = try api.bind(apiEndpoint)
        try serve(events.socket, role: "events")
        try events.bind(eventsEndpoint)
        registerCommonOps()
        watch(events.socket) { [unowned self] in serveSubscriptions() }
    }

    /// The host of a service started from its flags: endpoints, storage and keys from `settings`.
    public convenience init(settings: ServiceSettings, layout: StoreLayout, logger: Logger, time: TimeSource = SystemTime(),
                            context: Context? = nil) throws {
        try self.init(service: settings.name, apiEndpoint: settings.api, eventsEndpoint: settings.events,
                      dataDirectory: settings.dataDirectory, database: settings.database, layout: layout, logger: logger, time: time,
                      security: settings.security, context: context)
        acceptUpstreamReset = settings.acceptUpstreamReset
        instance = settings.instance
        metrics.instance(settings.instance)
        if settings.insecure && settings.security == nil {
            logger.warning("--insecure: serving plaintext without keys; anyone who can reach these ports reads and writes every user's data",
                           metadata: ["api": "\(apiEndpoint)", "events": "\(eventsEndpoint)"])
        }
    }

    /// Adds a socket to the loop's poll; `onReadable` runs on the loop thread when it has input.
    public func watch(_ socket: Socket, _ onReadable: @escaping () -> Void) { watched.append((socket, onReadable)) }

    /// How to connect to `upstream`: CURVE with this service's certificate when it runs with keys.
    public func credentials(for upstream: ServiceName) throws -> CurveCredentials? {
        try security?.settings.credentials(for: upstream)
    }

    /// Who sent a message whose connection carries `userId` (the ZAP handler's User-Id property).
    public func caller(userId: String?) -> Caller { security?.caller(userId: userId) ?? .local }

    func follow(_ feed: UpstreamFeed) {
        feeds.append(feed)
        count(UpstreamFeed.resetCounter, by: 0)
    }

    // MARK: Transactions and the outbox

    /// Runs `body` in one write transaction; its commit actions run after it commits, and its events
    /// are published once the commit is on disk (`CommitSync`). Inside another `write` it becomes a
    /// savepoint of that transaction. `copyOfUpstream`: see `SQLiteStore.write`.
    @discardableResult
    public func write<T>(copyOfUpstream: Bool = false, _ body: (Transaction) throws -> T) throws -> T {
        if isWriting { return try store.write(now: time.now(), copyOfUpstream: copyOfUpstream, body) { finish($0) } }
        isWriting = true
        defer { isWriting = false }
        return try store.write(now: time.now(), copyOfUpstream: copyOfUpstream, { tx in
            try beforeWriting?(tx)
            return try body(tx)
        }) { finish($0) }
    }

    private func finish(_ transaction: Transaction) {
        let pending = transaction.events
        guard let last = pending.last else { return }
        commits.afterDurable { [unowned self] in
            // Counted by runs of one type (a planner's step is thousands of one or two): a counter
            // looked up by its type's name for each event was a fortieth of the planner's loop.
            var run: (type: String, count: Int64, lastSeq: Int64)?
            func countRun() {
                if let run { metrics.published(type: run.type, count: run.count, lastSeq: run.lastSeq) }
            }
            for event in pending {
                do {
                    try events.send(topic: event.topic, event.envelope)
                    if run?.type != event.type {
                        countRun()
                        run = (event.type, 0, 0)
                    }
                    run!.count += 1
                    run!.lastSeq = event.seq
                } catch {
                    // Stored already: a subscriber that misses it gets it from events.since.
                    logger.warning("publish failed", metadata: ["topic": "\(event.topic)", "seq": "\(event.seq)", "error": "\(error)"])
                }
            }
            countRun()
            eventLog.published(through: last.seq)
        }
    }

    /// The zguide's Clone heartbeat: after a second of silence, the newest seq, so followers notice
    /// a gap or a silent publisher without polling.
    private func heartbeatIfQuiet() {
        guard Date().timeIntervalSince(events.lastSent) * 1000 >= Double(Heartbeat.intervalMilliseconds),
              case let newest = store.newestSeq(),
              let frame = try? WireJSON.encode(Heartbeat(source: name, lastSeq: newest, time: time.now(), logId: eventLog.identity))
        else { return }
        announcedSeq = newest
        try? events.send(topic: Heartbeat.topic, frame)
    }

    /// The SQLite store, for tests of the embedded backend (its files, pragmas and syncs).
    public var sqlite: SQLiteStore {
        guard let store = store as? SQLiteStore else { preconditionFailure("\(name): SQLite-only code ran on PostgreSQL") }
        return store
    }

    public var database: DatabaseQueue { sqlite.database }

    /// Reads outside any transaction, on either backend.
    public func query<T>(_ body: (StoreConnection) throws -> T) throws -> T { try store.query(body) }

    public func read<T>(_ body: (Database) throws -> T) throws -> T { try sqlite.read(body) }

    // MARK: Counters, errors, refusals

    /// Counts in `health.counters` and `lht_<counter in snake case>_total`. `by: 0` makes both exist
    /// at 0, so every family a service has is in every scrape (and `promtool` sees it from the start).
    public func count(_ counter: String, by amount: Int64 = 1) {
        counters[counter, default: 0] += amount
        metrics.count(counter, by: amount)
    }

    /// As `count`, from any thread (a read behind the log): the loop adds it at its next turn, and
    /// before `health` answers.
    public func countFromAnyThread(_ counter: String) {
        countedOffLoop.withLock { $0[counter, default: 0] += 1 }
    }

    /// Adds what `countFromAnyThread` counted. Loop thread.
    func addCountsFromOtherThreads() {
        let counted = countedOffLoop.withLock { counts in
            defer { counts = [:] }
            return counts
        }
        for (counter, amount) in counted { count(counter, by: amount) }
    }

    /// Counts in a labelled metric family only (not in `health`): `lht_<family>_total{label="value"}`,
    /// e.g. `countMetric("decisions", "kind", "due")`. `value` must come from a small fixed set.
    /// `by: 0` makes the series exist at 0. Loop thread only, like `count`.
    public func countMetric(_ family: String, _ label: String, _ value: String, by amount: Int64 = 1) {
        metrics.count(family: family, label: label, value: value, by: amount)
    }

    /// Logs an error and keeps it as the last one, for `health` and `lht status`.
    public func recordError(_ message: String, _ metadata: Logger.Metadata = [:]) {
        logger.error("\(message)", metadata: metadata)
        lastError = metadata.isEmpty ? message : "\(message) \(metadata.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))"
    }

    /// Counts a refused request, subscription or connection (`health.counters.unauthorized`, or
    /// `counter`; `lht_auth_refused_total{reason}`) and logs it at most once a minute per key and reason.
    func refused(_ caller: Caller, reason: String, _ detail: String, op: String? = nil, userId: String? = nil,
                 counter: String = "unauthorized") {
        counters[counter, default: 0] += 1
        metrics.authRefused(reason)
        let key = caller.fingerprint + " " + reason
        let now = Date()
        guard refusalsLogged[key].map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return }
        refusalsLogged[key] = now
        var metadata: Logger.Metadata = ["key": "\(caller.fingerprint)", "reason": "\(reason)", "detail": "\(detail)"]
        if let op { metadata["op"] = "\(op)" }
        if let userId = caller.user?.description ?? userId { metadata["userId"] = "\(userId)" }
        logger.warning("refused", metadata: metadata)
    }

    /// The ZAP handler's refusals into `lht_auth_refused_total`, at most once a second.
    private func syncHandshakeRefusals() {
        guard let security, Date().timeIntervalSince(refusalsSynced) >= 1 else { return }
        refusalsSynced = Date()
        metrics.syncHandshakeRefusals(Dictionary(uniqueKeysWithValues: security.refusals.map { ($0.key.rawValue, $0.value) }))
    }

    /// An upstream feed applied events or heard its upstream's newest seq.
    func upstreamProgressed(_ feed: UpstreamFeed) {
        metrics.upstreamLag(feed.upstream.rawValue, max(0, feed.upstreamSeq - feed.appliedSeq))
    }

    private func serveSubscriptions() {
        do {
            try events.serveSubscriptions(caller: caller(userId:)) { [unowned self] who, prefix in
                refused(who, reason: "subscription", "\"\(prefix.prefix(80))\"")
            }
        } catch {
            recordError("reading subscriptions failed", ["error": "\(error)"])
        }
    }

    /// The line a starter waits for.
    public func readyLine(extra: String = "") -> String {
        "ready \(name) api=\(apiEndpoint) events=\(eventsEndpoint)" + (extra.isEmpty ? "" : " " + extra)
    }

    // MARK: The loop

    /// Serves until `shutdown` is requested; the message in hand is finished first.
    public func run(until shutdown: ShutdownSignal) {
        do {
            try commits.startThread()
        } catch {
            // Commits are then synced on this thread, as outside the loop: slower, as safe.
            recordError("the commit sync thread did not start", ["error": "\(error)"])
        }
        do {
            try store.readsBehindTheLog?.startAnswering()
        } catch {
            // Answers are then taken at each turn of the loop: later, as correct.
            recordError("the wake for reads behind the log did not start", ["error": "\(error)"])
        }
        isServing = true
        store.waitWhileRewinding = { [unowned self] isFinished in answerHealthOnly(until: isFinished) }
        defer {
            store.waitWhileRewinding = nil
            store.readsBehindTheLog?.stopAnswering()
            commits.stopThread()
            store.close()
        }
        let sockets = [api] + watched.map(\.socket)
        // Other threads' news: a sync done, reads answered. Taken before what they tell is looked at.
        let signals = [commits.wake, store.readsBehindTheLog?.answersWake].compactMap { $0 }
        while !shutdown.isRequested {
            // Requests held wait out what is left of their group commit window, if any.
            var timeout = held.isEmpty ? 100 : Int((groupCommit.nanosecondsLeft(at: DispatchTime.now().uptimeNanoseconds) + 999_999) / 1_000_000)
            if let deadline = nextDeadline?() {
                timeout = max(0, min(timeout, Int(deadline.milliseconds(since: time.now()))))
            }
            // Upstream calls in flight are polled too: their replies and deadlines wake the loop.
            let upstream = exchanges.pollSet()
            if let deadline = exchanges.millisecondsToNextDeadline() { timeout = min(timeout, deadline) }
            do {
                let readable = try Poller.readable(sockets + upstream, signals: signals, timeoutMilliseconds: timeout)
                for (signal, given) in zip(signals, readable.suffix(signals.count)) where given { signal.clear() }
                if readable[0] || !held.isEmpty { try serveAPI() }
                for (index, entry) in watched.enumerated() where readable[index + 1] { entry.onReadable() }
                store.readsBehindTheLog?.runAnswered()
                addCountsFromOtherThreads()
                commits.runDurable()
                exchanges.serve(readable: readable[sockets.count..<sockets.count + upstream.count])
                onTick?()
                heartbeatIfQuiet()
                syncHandshakeRefusals()
                syncOwnershipMetrics()
            } catch let error as ZMQError where error.isTerminated {
                break
            } catch {
                recordError("loop error", ["error": "\(error)"])
            }
        }
        // Requests read and held are answered; calls in flight end as unavailable, so deferred
        // requests still get their reply. Nothing more is held meanwhile.
        isServing = false
        while !held.isEmpty, (try? serveAPI()) != nil {}
        exchanges.cancelAll()
        logger.info("stopping")
    }

    /// For a process about to exit (PROTOCOL "Operations", Stop), after `run` returned: takes no
    /// more requests, and gives the replies and events already queued up to `lingerMilliseconds`
    /// to reach their peers, since a socket closed with LINGER 0 drops them. Then terminates the
    /// context, waiting at most `lingerMilliseconds` + 200 ms. Returns whether everything went out.
    @discardableResult
    public func closeForExit(lingerMilliseconds: Int32 = 1000) -> Bool {
        for socket in [api, events.socket] { try? socket.setLinger(milliseconds: lingerMilliseconds) }
        api.close()
        events.socket.close()
        for entry in watched { entry.socket.close() }
        return context.terminate(waitingAtMost: Int(lingerMilliseconds) + 200)
    }

    func health() -> HealthReply {
        addCountsFromOtherThreads()
        var counters = counters
        for (reason, count) in security?.refusals ?? [:] { counters["authRefused.\(reason.rawValue)"] = Int64(count) }
        let upstreams = feeds.map { UpstreamHealth(name: $0.upstream.rawValue, appliedSeq: $0.appliedSeq, upstreamSeq: $0.upstreamSeq) }
        return HealthReply(service: name, version: version, uptimeSeconds: Int64(Date().timeIntervalSince(startedAt)),
                           lastSeq: max(eventLog.publishedSeq, announcedSeq), counters: counters, upstreams: upstreams, lastError: lastError,
                           logId: eventLog.identity, tzdata: tzdataVersion?(), instance: instance,
                           owns: ownership)
    }
}
