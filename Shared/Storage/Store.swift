import Foundation
import LHTSchema
import Logging
import ZeroMQ

/// A service's storage in the terms every backend keeps (docs/storage.md): the log, durable
/// tables beside it, projections and upstream cursors. `SQLiteStore` is the embedded default
/// (`EventFileStore` where the log is all a service keeps durably), `PostgresStore` the one many
/// instances share; `StoreLayout` says what a service stores, once for all. The service's loop owns
/// its store and calls it from its own thread only.
public protocol Store: AnyObject {
    var eventLog: EventLog { get }
    /// Where replies and events wait until the commit they tell of is on disk.
    var durability: Durability { get }
    /// Runs `body` in one write transaction at `now`; `committed` gets it once it committed (its
    /// commit actions ran), to publish its events once they are on disk. Inside another `write` it
    /// becomes a savepoint of that transaction. `copyOfUpstream`: see `SQLiteStore.write`.
    func write<T>(now: Instant, copyOfUpstream: Bool, _ body: (Transaction) throws -> T, committed: (Transaction) -> Void) throws -> T
    /// Runs `body` outside any write transaction, on a snapshot of what has committed.
    func query<T>(_ body: (StoreConnection) throws -> T) throws -> T
    /// The seq an upstream feed was applied through, and the identity of the log those seqs are of.
    func cursor(_ upstream: String) throws -> (seq: Int64, logId: RecordID?)
    /// The newest seq a follower may fetch now, for the heartbeat: what this instance published, or
    /// on a log that instances share, what any of them committed, so a follower also learns of an
    /// event whose instance stopped between its commit and its publish.
    func newestSeq() -> Int64
    /// How the writer waits for what it must not run ahead of, another thread's work (SQLite's log
    /// rewind) or the server's answer (PostgreSQL, behind a lock another instance holds): the
    /// service's loop answers `health` meanwhile. Nil: it blocks.
    var waitAnsweringHealth: ((_ isFinished: @escaping () -> Bool) -> Void)? { get set }
    /// Told, after each write transaction that took a lock other instances wait on (PostgreSQL's log
    /// row), how long it held it: from the server's answer to the lock to the end of the
    /// transaction. Never called where no other instance waits (SQLite).
    var logLockReleased: ((_ heldNanoseconds: UInt64) -> Void)? { get set }
    /// For a clean stop.
    func close()
    /// Whether other instances write this store too (what they change is not in this one's memory).
    var isShared: Bool { get }
    /// The partitions whose time-driven work this instance does now (PROTOCOL "Owners",
    /// `StoreLayout.partitioned`): every one when nothing else shares the store.
    var ownedPartitions: PartitionSet { get }
    /// Takes this instance's share of the partitions and lets go of the rest; returns those newly
    /// taken, whose work it must catch up on. Nothing changes where nothing else shares the store.
    func balancePartitions() throws -> PartitionSet
    /// When this instance last renewed its partition leases, in uptime nanoseconds
    /// (`DispatchTime.now().uptimeNanoseconds`): the age of its claim on its share. Nil where
    /// nothing else shares the store.
    var leaseRenewedAt: UInt64? { get }
    /// How long the host's group commit waits under load for requests to share a turn and its sync:
    /// the bytes a record costs decide it (docs/decisions/0003-group-commit-window.md).
    var groupCommitNanoseconds: UInt64 { get }
    /// Where a thread applies the tables behind the log (`EventFileStore`): reads run there, off the
    /// loop, each at its point in the log. Nil where a write transaction has the tables: reads run in it.
    var readsBehindTheLog: ReadsBehindTheLog? { get }
    /// Where a thread of its own may read while the loop takes the rows it hands over (loading every
    /// reminder at start): SQLite's, whose connections serialize the reads. Nil where the store's one
    /// connection is the loop's (PostgreSQL).
    var concurrentReads: ConcurrentReads? { get }
    /// Has every write transaction run `sql` right after taking the log row's lock, and give its rows
    /// to `read` before the transaction's body runs: where each answer is a round trip (PostgreSQL)
    /// it goes out with the lock, in its round trip. False where the store does not: the service
    /// reads in its write hook instead.
    func readUnderEachWriteLock(_ sql: String, _ arguments: [SQLValue], _ read: @escaping (SQLRow) -> Void) -> Bool
    /// From here on a write of upstream events is first sent whole with its COMMIT, in one round
    /// trip (`Transaction.expectsInsteadOfReading`), and run again the usual way if that fails; its
    /// body must then queue expectations where it would read. False where the store does not (each
    /// read is answered at once anyway).
    func expectInUpstreamWrites() -> Bool
}

/// Reads on any thread, each on a snapshot of what has committed.
public protocol ConcurrentReads: Sendable {
    /// Runs `body` once over many rows that are not read again: through a small page cache, so that
    /// it does not leave the connection's cache full of their pages.
    func readOnce(_ body: (StoreConnection) throws -> Void) throws
}

/// Reads of tables that a thread applies behind the log (`ProjectionApplier`), asked for in a write
/// transaction (`Transaction.readBehindTheLog`): each runs on that thread once the tables hold
/// exactly the events before it, and its answer comes back to the loop thread. All calls are made on
/// the loop thread.
public protocol ReadsBehindTheLog: AnyObject {
    /// Given when answers wait for `runAnswered`; the loop polls it (`startAnswering`).
    var answersWake: WakeSignal? { get }
    /// From here on answers wake the loop through `answersWake`.
    func startAnswering() throws
    /// Runs the answers that came.
    func runAnswered()
    /// Runs every answer still to come, waiting for them.
    func waitForAnswers()
    /// Runs every answer still to come, and stops waking the loop.
    func stopAnswering()
}

extension Store {
    public var groupCommitNanoseconds: UInt64 { 3_000_000 }
    public var isShared: Bool { false }
    public var readsBehindTheLog: ReadsBehindTheLog? { nil }
    public var concurrentReads: ConcurrentReads? { nil }
    public var ownedPartitions: PartitionSet { .all }
    public func balancePartitions() throws -> PartitionSet { .none }
    public var leaseRenewedAt: UInt64? { nil }
    public func readUnderEachWriteLock(_ sql: String, _ arguments: [SQLValue], _ read: @escaping (SQLRow) -> Void) -> Bool { false }
    public func expectInUpstreamWrites() -> Bool { false }
}

/// What a service stores, stated once for both backends.
public struct StoreLayout: Sendable {
    /// SQLite's files, as one of the layouts a service can have.
    public var sqlite: SQLiteLayout
    /// PostgreSQL: the service's tables, in migrations of their own (run once each, in order),
    /// in SQL both backends take (`SQLDialect`); nil for a service whose statements are
    /// still SQLite's only: it refuses `--database`. Projections are plain tables there, written
    /// in the same transactions, so they are never behind.
    public var postgresMigrations: [Migration]?
    /// PostgreSQL: the instances share the service's time-driven work by partitions of users,
    /// each holding leases on its share (`PostgresStore.balancePartitions`).
    public var partitioned: Bool

    public init(sqlite: SQLiteLayout, postgresMigrations: [Migration]? = nil, partitioned: Bool = false) {
        self.sqlite = sqlite
        self.postgresMigrations = postgresMigrations
        self.partitioned = partitioned
    }

    /// Tables in the log's SQLite file alone, made by `sqliteMigrations`.
    public init(sqliteMigrations: [Migration], postgresMigrations: [Migration]? = nil, partitioned: Bool = false) {
        self.init(sqlite: .tables(sqliteMigrations), postgresMigrations: postgresMigrations, partitioned: partitioned)
    }
}

/// Where a service keeps its log and tables in SQLite: each case carries what that layout needs,
/// the log file's migrations as they ran on existing files (the history stays) among them.
public enum SQLiteLayout: Sendable {
    /// The log and the durable tables in `<service>.sqlite`. `projection`: tables derived from the log
    /// in a file never synced, with the upstream cursors. `behindTheLog`: tables a thread applies
    /// from the log's events after each commit (`TransactionTables.someBehindTheLog`).
    case tables(_ migrations: [Migration], projection: Projection? = nil, behindTheLog: TablesBehindTheLog? = nil)
    /// The log is the service's only durable state, so it is a file of its own (`EventFileStore`),
    /// every table a projection applied behind it, and a write transaction has no tables
    /// (`TransactionTables.allBehindTheLog`): no upstream cursors either. `copiedFrom`: the SQLite
    /// file's migrations, for a log still kept there, read once to copy it out.
    case logOnly(copiedFrom: [Migration], projection: Projection)
}

/// SQLite tables beside the log's file and its projection that a thread of their own applies from
/// the log's events after each commit, in `<service>.<file>.sqlite`. For rows that only the log's own
/// events make, one per event (the planner's decisions): the loop then writes the log row alone
/// (docs/decisions/0015-planner-decisions-behind-the-log.md). PostgreSQL has them as plain tables.
public struct TablesBehindTheLog: Sendable {
    public let file: String
    public let projection: Projection

    public init(file: String, projection: Projection) {
        self.file = file
        self.projection = projection
    }
}

/// Makes what depends on a commit (a reply, a published event) wait until the commit is durable.
public protocol Durability: AnyObject {
    /// Runs `action` once every commit made so far is on disk: at once when they are.
    func afterDurable(_ action: @escaping () -> Void)
    /// Runs the actions whose commits are on disk now, in order. Loop thread.
    func runDurable()
    /// Given when more commits became durable; the loop polls it. Nil: nothing to poll.
    var wake: WakeSignal? { get }
    /// From here on durability is awaited on a thread of its own, while the loop runs.
    func startThread() throws
    func stopThread()
}

/// A backend whose commit returns only once it is durable (PostgreSQL with `synchronous_commit`
/// on): nothing ever waits.
public final class DurableOnCommit: Durability {
    public init() {}
    public func afterDurable(_ action: @escaping () -> Void) { action() }
    public func runDurable() {}
    public var wake: WakeSignal? { nil }
    public func startThread() throws {}
    public func stopThread() {}
}
