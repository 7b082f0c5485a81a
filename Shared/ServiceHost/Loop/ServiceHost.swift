import DequeModule
import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Logging
import PostgresStorage
import SQLiteStorage
import Storage
import Synchronization
import ZeroMQ

/// The shared shell of every service: the api ROUTER, the events XPUB, the store with its log
/// (`Storage`), and one loop on one thread that owns all of them (`ServiceHost+Loop`). Requests
/// are served in `Requests/`; who may do what comes from the catalog (`Access`).
public final class ServiceHost {
    public let service: ServiceName
    public var name: String { service.rawValue }
    public let version = "1.0.0"
    public let logger: Logger
    public let context: Context
    /// SQLite in the data directory, or PostgreSQL with `--database` (docs/storage.md).
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
    public internal(set) var counters: [String: Int64] = [:]
    /// What `countFromAnyThread` counted and the loop has not added to `counters` yet.
    let countedOffLoop = Mutex<[String: Int64]>([:])
    /// Whether followers adopt an upstream's new history instead of halting (`--accept-upstream-reset`).
    public var acceptUpstreamReset = false
    /// Whether the service's time-driven work is shared by partitions (`StoreLayout.partitioned`):
    /// then `health.owns` tells this instance's share.
    let sharesWorkByPartitions: Bool
    var ownershipMetricsSynced: UInt64 = 0
    /// The service this host works for (`attach`); nil for a bare host, which has no timed work.
    weak var attached: (any Service)?
    private var isWriting = false
    /// This instance's name (`--instance`) for `health`; nil for a host not started from flags.
    public var instance: String?

    let api: Socket
    let events: EventSocket
    let security: SocketSecurity?
    let metrics = HostMetrics()
    var operations: [String: any Operation] = [:]
    var watched: [(socket: Socket, onReadable: () -> Void)] = []
    var feeds: [UpstreamFeed] = []
    /// Requests to other services in flight (`UpstreamClient`): polled by the loop, never waited for.
    let exchanges = PendingExchanges()
    let startedAt = Date()
    var lastError: String?
    /// Refusals already logged, by key and reason: a misbehaving client must not flood the log.
    var refusalsLogged: [String: Date] = [:]
    var refusalsSynced = Date.distantPast
    /// When each server socket's closed connections were last logged (`connectionClosed`).
    var closesLogged: [String: Date] = [:]
    /// The seq the last heartbeat announced: on a log that instances share, what any of them
    /// committed a second ago at most, which `health` reports without asking the database.
    var announcedSeq: Int64 = 0
    /// Whether `run` is serving: the loop thread is the caller, and requests can be answered meanwhile.
    var isServing = false
    /// Requests read but not yet run: gathered for a turn (`groupCommit`), or read while the loop
    /// answered only `health`.
    var held = Deque<(envelope: [Data], request: IncomingRequest)>()
    var heldBytes = 0
    /// When the loop last looked at the api socket, in uptime nanoseconds (`answerHealthIfDue`).
    var apiLookedAt: UInt64 = 0
    /// How long requests read under load wait for others to share their turn's transaction and sync;
    /// the store says how long (`Store.groupCommitNanoseconds`; docs/decisions/0003-group-commit-window.md).
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
            switch layout.sqlite {
            case .logOnly(let migrations, let projection):
                store = try EventFileStore(directory: dataDirectory, name: service.rawValue, sqliteMigrations: migrations,
                                           projection: projection, logger: logger)
            case .tables(let migrations, let projection, let behindTheLog):
                store = try SQLiteStore(directory: dataDirectory, name: service.rawValue, migrations: migrations,
                                        projection: projection, behindTheLog: behindTheLog, logger: logger, walLimit: walLimit)
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
        // Likewise the lock holds where other instances wait on this one's writes.
        if store.isShared { metrics.exportLogLockHolds() }

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
        // Here, not in `main`: a service built in-process warns as well, and once.
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

    /// Makes the host call `service`'s timed work, deadline, tzdata version and write hook. `run`
    /// attaches the service; one whose hook must run in its own start-up writes attaches itself first.
    public func attach(_ service: any Service) {
        precondition(service.host === self, "\(name): a service attaches to its own host")
        attached = service
    }

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
            tx.betweenItems = { [unowned self] in answerHealthIfDue() }
            try attached?.beforeWriting(tx)
            return try body(tx)
        }) { finish($0) }
    }

    /// Reads outside any transaction, on either backend.
    public func query<T>(_ body: (StoreConnection) throws -> T) throws -> T { try store.query(body) }

    /// The line a starter waits for.
    public func readyLine(extra: String = "") -> String {
        "ready \(name) api=\(apiEndpoint) events=\(eventsEndpoint)" + (extra.isEmpty ? "" : " " + extra)
    }
}
