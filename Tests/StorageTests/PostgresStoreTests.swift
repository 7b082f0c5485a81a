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
    static let migrations = [PostgresMigration("logged", ["CREATE TABLE logged (seq BIGINT PRIMARY KEY, id TEXT NOT NULL)"])]
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
        #expect(try Self.log(in: first) == 1)  // connected again: it writes, as any instance does
        for _ in 0..<3 { _ = try first.balancePartitions(); _ = try second.balancePartitions() }
        #expect(first.ownedPartitions.count == 32 && second.ownedPartitions.count == 32)
        #expect(first.ownedPartitions.union(second.ownedPartitions) == .all)
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
