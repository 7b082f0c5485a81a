import Dispatch
import Foundation
import LHTSchema
import Logging
import PostgresStorage
import Storage
import Synchronization
import Testing
import TestSupport

/// `PostgresStore` against a real PostgreSQL of the test's own: the same `Store` terms as
/// `SQLiteStore` (a write's events get the seqs after the log's newest, a failed body leaves
/// nothing, a nested write is a savepoint), and the partition leases instances share a service's work by.
/// Serialized: each test starts a server of its own.
@Suite(.serialized) struct PostgresStoreTests {
    static let migrations = [Migration("logged", sql: ["CREATE TABLE logged (seq BIGINT PRIMARY KEY, id TEXT NOT NULL)"])]
    static let start = Instant(secondsSince1970: 1_780_000_000)

    static func open(_ postgres: TestPostgres, partitioned: Bool = false, keepTrying: @escaping () -> Bool = { true }) throws -> PostgresStore {
        try PostgresStore(url: postgres.url, service: "session-logger", migrations: migrations, partitioned: partitioned,
                          logger: quietLogger("store"), keepTrying: keepTrying)
    }

    /// One session event and its row, as a service writes them; `fail` throws after both.
    @discardableResult
    static func log(in store: PostgresStore, fail: Bool = false) throws -> Int64 {
        let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .workout, start: start,
                                    end: start.adding(seconds: 600), source: nil, loggedAt: start)
        return try store.write(now: start, copyOfUpstream: false, { tx in
            try tx.sql.execute("INSERT INTO logged (seq, id) VALUES (?, ?)", [.integer(tx.nextSeq), .text(session.id.description)])
            let seq = try tx.append(Events.sessionLogged, userId: session.userId, activity: .workout, data: session)
            if fail { throw HarnessError("the body failed") }
            return seq
        }, committed: { _ in })
    }

    static func rows(_ store: PostgresStore) throws -> [Int64] {
        try store.query { try $0.rows("SELECT seq FROM logged ORDER BY seq", []) { $0.integer(0) } }
    }

    @Test func twoStoresShareOneLogAndAFailedBodyLeavesNothing() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let first = try Self.open(postgres), second = try Self.open(postgres)
        #expect(first.eventLog.identity == second.eventLog.identity)

        #expect(try [Self.log(in: first), Self.log(in: second), Self.log(in: first)] == [1, 2, 3])
        #expect(throws: HarnessError.self) { try Self.log(in: second, fail: true) }
        #expect(try Self.log(in: second) == 4, "a rolled-back write takes no seq")
        #expect(try Self.rows(first) == [1, 2, 3, 4])

        // A nested write is a savepoint: its failure undoes its rows only.
        try first.write(now: Self.start, copyOfUpstream: false, { tx in
            try tx.sql.execute("INSERT INTO logged (seq, id) VALUES (100, 'outer')", [])
            #expect(throws: HarnessError.self) {
                try first.write(now: Self.start, copyOfUpstream: false, { inner in
                    try inner.sql.execute("INSERT INTO logged (seq, id) VALUES (101, 'inner')", [])
                    throw HarnessError("inner")
                }, committed: { _ in })
            }
        }, committed: { _ in })
        #expect(try Self.rows(second) == [1, 2, 3, 4, 100])
        let page = try second.query { try second.eventLog.since(EventsSinceRequest(after: 0), for: nil, publisher: .sessionLogger, in: $0) }
        #expect(try WireJSON.decode(EventsSinceReply.self, from: page).events.map(\.seq) == [1, 2, 3, 4])
    }

    /// Three instances share the 64 partitions: each holds a share, no partition twice, and
    /// together all of them; one that stops lets its share go, and the others take it.
    @Test func instancesShareThePartitionsAndTakeAStoppedOnesShare() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let stores = try (0..<3).map { _ in try Self.open(postgres, partitioned: true) }
        // Each balances in turn until nothing moves: the first takes everything, then gives up
        // what the later members' ranks give them.
        func settle(_ stores: [PostgresStore]) throws {
            for _ in 0..<4 { for store in stores { _ = try store.balancePartitions() } }
        }
        try settle(stores)
        let shares = stores.map(\.ownedPartitions)
        #expect(shares.map(\.count).sorted() == [21, 21, 22])
        #expect(shares.reduce(PartitionSet.none) { $0.union($1) } == .all)
        for (index, share) in shares.enumerated() {
            for other in shares[(index + 1)...] { #expect(share.subtracting(other) == share, "a partition held twice") }
        }

        stores[1].close()
        #expect(stores[1].ownedPartitions == .none)
        try settle([stores[0], stores[2]])
        #expect(stores[0].ownedPartitions.union(stores[2].ownedPartitions) == .all)
        #expect(stores[0].ownedPartitions.count + stores[2].ownedPartitions.count == 64)
    }

    /// A store closed (a clean stop) has let go of its leases when `close` returns, not once the
    /// server's process for its session has ended, which on a busy machine comes later: an instance
    /// balancing right after takes them all in its first balance.
    @Test func aClosedStoresLeasesAreFreeWhenCloseReturns() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        for _ in 0..<5 {
            let first = try Self.open(postgres, partitioned: true), next = try Self.open(postgres, partitioned: true)
            _ = try first.balancePartitions()
            #expect(first.ownedPartitions == .all)
            first.close()
            #expect(try next.balancePartitions() == .all, "the closed store's leases were still held")
            next.close()
        }
    }

    /// An instance whose session ended (as when the server drops a cut-off client) holds nothing
    /// from then on, and cannot commit; another takes its partitions; back, it rejoins and gets a share.
    @Test func anInstanceWhoseSessionEndedLosesItsPartitionsAndRejoins() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let first = try Self.open(postgres, partitioned: true)
        #expect(try first.balancePartitions() == .all)
        let admin = try postgres.connect()
        try admin.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND granted")
        let second = try Self.open(postgres, partitioned: true)
        #expect(try second.balancePartitions() == .all)  // the first's leases went with its session

        #expect(throws: StoreUnavailable.self) { try Self.log(in: first) }  // the lost connection
        #expect(first.ownedPartitions == .none)
        #expect(try Self.eventually { try Self.log(in: first) } == 1)  // connected again: it writes, as any instance does
        for _ in 0..<3 { _ = try first.balancePartitions(); _ = try second.balancePartitions() }
        #expect(first.ownedPartitions.count == 32 && second.ownedPartitions.count == 32)
        #expect(first.ownedPartitions.union(second.ownedPartitions) == .all)
    }

    /// An instance that stops making progress while idle (paused, stuck: its session stays open)
    /// loses its leases when the server ends its idle session, and another takes them within 15 s
    /// of its last renewal. Resumed, it commits nothing on the old session, then rejoins.
    @Test func aStalledInstancesLeasesExpireAndItRejoins() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let stalled = try Self.open(postgres, partitioned: true), other = try Self.open(postgres, partitioned: true)
        #expect(try stalled.balancePartitions() == .all)
        let renewed = try #require(stalled.leaseRenewedAt)
        #expect(try other.balancePartitions() == .none)
        try waitUntil(timeout: 15, interval: 0.5, "the other instance holding every partition") {
            try other.balancePartitions()
            return other.ownedPartitions == .all
        }
        let taken = Double(DispatchTime.now().uptimeNanoseconds - renewed) / 1e9
        #expect(taken <= 15, "taken over \(taken) s after the last renewal")
        #expect(try #require(other.leaseRenewedAt) > renewed)

        #expect(throws: StoreUnavailable.self) { try Self.log(in: stalled) }
        #expect(stalled.ownedPartitions == .none)
        #expect(try Self.eventually { try Self.log(in: stalled) } == 1)
        try waitUntil(timeout: 5, interval: 0.1, "two members sharing") {
            _ = try stalled.balancePartitions(); _ = try other.balancePartitions()
            return stalled.ownedPartitions.count == 32 && other.ownedPartitions.count == 32
        }
    }

    /// A transaction left open (its instance paused holding the log row's lock, which every write
    /// waits on) is ended by the server, and the others write on; its commit fails.
    @Test func aTransactionLeftOpenIsEndedAndTheOthersWriteOn() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let frozen = try Self.open(postgres)
        // The other instance, used by the thread below only.
        nonisolated(unsafe) let other = try Self.open(postgres)
        let otherWrote = Mutex<Date?>(nil)
        let started = Date()
        #expect(throws: StoreUnavailable.self) {
            try frozen.write(now: Self.start, copyOfUpstream: false, { _ in
                Thread { _ = try? Self.log(in: other); otherWrote.withLock { $0 = Date() } }.start()
                Thread.sleep(forTimeInterval: 7)  // holds the lock past the server's idle-in-transaction timeout
            }, committed: { _ in })
        }
        let wrote = try #require(otherWrote.withLock { $0 })
        #expect(wrote.timeIntervalSince(started) < 7, "the other instance waited for the frozen one")
        #expect(try Self.rows(other).count == 1)
        #expect(try Self.eventually { try Self.log(in: frozen) } == 2)
    }

    /// The store's connection goes while one host of a multi-host URL takes its connect timeout:
    /// meanwhile every write fails at once, none waits for the connect; then the store writes again.
    @Test func reconnectingToAMultiHostURLNeverBlocksAWrite() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let silent = try SilentListener()
        let url = "postgresql://postgres@127.0.0.1:\(silent.port),127.0.0.1:\(postgres.port)/postgres?connect_timeout=2&target_session_attrs=read-write"
        let store = try PostgresStore(url: url, service: "session-logger", migrations: Self.migrations, logger: quietLogger("store"))
        #expect(try Self.log(in: store) == 1)
        try postgres.connect().execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()")
        var failures = 0, slowest = 0.0
        var seq: Int64?
        let deadline = Date().addingTimeInterval(20)
        while seq == nil, Date() < deadline {
            let started = Date()
            do { seq = try Self.log(in: store) } catch is StoreUnavailable { failures += 1 }
            slowest = max(slowest, Date().timeIntervalSince(started))
            Thread.sleep(forTimeInterval: 0.05)  // pacing: a write every 50 ms while the store reconnects
        }
        #expect(seq == 2)
        #expect(failures >= 10, "the first host's connect timeout passed in \(failures) tries")
        #expect(slowest < 0.5, "a write waited \(slowest) s")
    }

    /// A promotion that lost log entries this instance saw committed (here: the tail deleted
    /// behind its back) is found at reconnect: the log takes a new identity before any new event,
    /// and another instance, still connected, takes it on at its next write.
    @Test func aLogThatLostItsTailTakesANewIdentity() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let saw = try Self.open(postgres), other = try Self.open(postgres)
        for _ in 0..<3 { try Self.log(in: saw) }
        let before = saw.eventLog.identity
        let admin = try postgres.connect()
        try admin.execute("DELETE FROM session_logger.log WHERE seq > 1")
        try admin.execute("DELETE FROM session_logger.logged WHERE seq > 1")
        try admin.execute("UPDATE session_logger.log_head SET last_seq = 1")
        try admin.execute("SELECT pg_terminate_backend(\(try #require(saw.backendPID)))")

        #expect(throws: StoreUnavailable.self) { try Self.log(in: saw) }
        #expect(try Self.eventually { try Self.log(in: saw) } == 2)
        let renewed = saw.eventLog.identity
        #expect(renewed != before)
        let identity = try admin.execute("SELECT id FROM session_logger.log_identity").first?.text(0)
        #expect(identity == renewed.description)
        #expect(try Self.log(in: other) == 3)
        #expect(other.eventLog.identity == renewed)
        // Nothing lost on a reconnect that finds the log as it left it: the identity stays.
        try admin.execute("SELECT pg_terminate_backend(\(try #require(other.backendPID)))")
        #expect(throws: StoreUnavailable.self) { try Self.log(in: other) }
        #expect(try Self.eventually { try Self.log(in: other) } == 4)
        #expect(other.eventLog.identity == renewed)
    }

    /// `body`'s result once it stops throwing `StoreUnavailable` (the store connecting again on
    /// its own thread), within 10 s.
    static func eventually<T>(_ body: () throws -> T) throws -> T {
        let deadline = Date().addingTimeInterval(10)
        while true {
            do { return try body() } catch is StoreUnavailable where Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }  // a retry's pause, as a client's
        }
    }

    /// Where a service's work is not partitioned, its instances hold no leases.
    @Test func anUnpartitionedStoreTakesNothing() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        #expect(try store.balancePartitions() == .none)
        #expect(store.ownedPartitions == .none)
    }
}

/// A TCP port that takes connections and never answers: a host whose PostgreSQL hangs, for
/// libpq's connect timeout to run out on.
private final class SilentListener {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 && listen(descriptor, 16) == 0
            }
        }
        guard descriptor >= 0, listening else { throw HarnessError("a silent listener: \(String(cString: strerror(errno)))") }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
