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
/// nothing, a nested write is a savepoint), and a one-instance service's standby and takeover.
/// Serialized: each test starts a server of its own.
@Suite(.serialized) struct PostgresStoreTests {
    static let migrations = [PostgresMigration("logged", ["CREATE TABLE logged (seq BIGINT PRIMARY KEY, id TEXT NOT NULL)"])]
    static let start = Instant(secondsSince1970: 1_780_000_000)

    static func open(_ postgres: TestPostgres, oneInstance: Bool = false, keepTrying: @escaping () -> Bool = { true }) throws -> PostgresStore {
        try PostgresStore(url: postgres.url, service: "session-logger", migrations: migrations, oneInstance: oneInstance,
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

    @Test func aStandbyTakesOverWhenTheActiveInstanceStops() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let active = try Self.open(postgres, oneInstance: true)
        try Self.log(in: active)

        let opened = Mutex<Date?>(nil)
        let giveUp = Atomic<Bool>(false)
        let standby = DispatchGroup()
        standby.enter()
        Thread {
            defer { standby.leave() }
            guard let store = try? Self.open(postgres, oneInstance: true, keepTrying: { !giveUp.load(ordering: .relaxed) }) else { return }
            opened.withLock { $0 = Date() }
            #expect((try? Self.log(in: store)) == 2)
            store.close()
        }.start()
        Thread.sleep(forTimeInterval: 1.5)
        #expect(opened.withLock { $0 } == nil, "the standby started while the active instance ran")

        let stopped = Date()
        active.close()
        if standby.wait(timeout: .now() + 10) == .timedOut {
            giveUp.store(true, ordering: .relaxed)
            _ = standby.wait(timeout: .now() + 5)
        }
        let took = try #require(opened.withLock { $0 }).timeIntervalSince(stopped)
        #expect(took < 2, "took over after \(took) s")
    }

    @Test func anInstanceWhoseLockWasTakenMeanwhileStops() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let first = try Self.open(postgres, oneInstance: true)
        // The first instance's session ends (as when the server drops a cut-off client), and a
        // second instance takes the lock before the first is back.
        let admin = try postgres.connect()
        try admin.execute("SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND granted")
        let second = try Self.open(postgres, oneInstance: true)

        #expect(throws: StoreUnavailable.self) { try Self.log(in: first) }  // the lost connection
        #expect(throws: StoreUnavailable.self) { try Self.log(in: first) }  // back, but superseded
        #expect(first.superseded)
        #expect(try Self.log(in: second) == 1)
        #expect(!second.superseded)
    }
}
