import Foundation
import LHTSchema
import PostgresStorage
import Storage
import Testing
import TestSupport

/// An upstream write sent whole with its COMMIT (`expectInUpstreamWrites`): one round trip while
/// what it expects holds, and the usual way, with the same outcome, once it does not.
extension PostgresStoreTests {
    /// Expecting: the body queues expectations where it would read; `runs` counts its runs.
    private static func upstreamWrite(_ store: PostgresStore, id: String, expecting condition: String = "true",
                                      runs: inout [Bool]) throws -> Int64 {
        var seen: [Bool] = []
        defer { runs += seen }
        return try store.write(now: start, copyOfUpstream: true, { tx in
            seen.append(tx.expectsInsteadOfReading)
            if tx.expectsInsteadOfReading { try tx.sql.expectLater(condition, [], "what the test expects") }
            try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, ?)", [.integer(tx.nextSeq), .text(id)])
            return try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: session())
        }, committed: { _ in })
    }

    @Test func anUpstreamWriteSentWholeIsOneRoundTripAndRunsAgainTheUsualWayWhenTheHeadMoved() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres), other = try Self.open(postgres)
        #expect(store.expectInUpstreamWrites())
        var runs: [Bool] = []
        var before = store.roundTrips
        #expect(try Self.upstreamWrite(store, id: "a", runs: &runs) == 1)
        #expect(runs == [true])
        #expect(store.roundTrips - before == 1, "BEGIN, the lock and its expectation, the body, the log and COMMIT in one")

        // Another instance committed since: the head this one saw last is not the log's.
        #expect(try Self.log(in: other) == 2)
        runs = []
        #expect(try Self.upstreamWrite(store, id: "b", runs: &runs) == 3)
        #expect(runs == [true, false], "sent whole, then the usual way")
        // After a write that ran again, the next goes the usual way at once; then whole again.
        runs = []
        #expect(try Self.upstreamWrite(store, id: "c", runs: &runs) == 4)
        before = store.roundTrips
        #expect(try Self.upstreamWrite(store, id: "d", runs: &runs) == 5)
        #expect(runs == [false, true] && store.roundTrips - before == 1)

        #expect(try Self.rows(store) == [1, 2, 3, 4, 5])
        let stored = try store.query { try $0.rows("SELECT seq FROM log ORDER BY seq", []) { $0.integer(0) } }
        #expect(stored == [1, 2, 3, 4, 5], "each seq once: nothing of the first try was stored")
    }

    /// The lock's statement expects the identity too: a log that another instance renewed at the
    /// same head (a lost tail found) is not written under the identity this one saw last.
    @Test func anUpstreamWriteSentWholeRunsAgainTheUsualWayWhenTheIdentityWasRenewed() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        _ = store.expectInUpstreamWrites()
        var runs: [Bool] = []
        #expect(try Self.upstreamWrite(store, id: "a", runs: &runs) == 1)
        let renewed = try postgres.connect().execute("UPDATE session_logger.log_identity SET id = gen_random_uuid()::text RETURNING id")
        runs = []
        #expect(try Self.upstreamWrite(store, id: "b", runs: &runs) == 2)
        #expect(runs == [true, false], "sent whole, then the usual way")
        #expect(store.eventLog.identity.description == renewed.first?.text(0)?.lowercased())
        #expect(try Self.rows(store) == [1, 2])
    }

    /// An expectation of the body the database does not meet: nothing of that try is stored, and
    /// the usual way's is.
    @Test func anUnmetExpectationOfTheBodyRunsItAgainTheUsualWay() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        _ = store.expectInUpstreamWrites()
        var runs: [Bool] = []
        #expect(try Self.upstreamWrite(store, id: "a", expecting: "EXISTS (SELECT 1 FROM logged)", runs: &runs) == 1)
        #expect(runs == [true, false])
        #expect(try Self.rows(store) == [1])
        let ids = try store.query { try $0.rows("SELECT id FROM logged", []) { $0.text(0) } }
        #expect(ids == ["a"])
    }

    /// Sent whole there are no savepoints: an item that fails fails the try, and the usual way
    /// isolates it as ever, the others stored once.
    @Test func anItemThatFailsInAWriteSentWholeIsIsolatedTheUsualWay() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        _ = store.expectInUpstreamWrites()
        var tries = 0
        let results = try store.write(now: Self.start, copyOfUpstream: true, { tx in
            tries += 1
            return try tx.eachIsolated([10, 11, 12], isFatal: StoreUnavailable.endsTransaction) { n in
                if n == 11 { throw HarnessError("item 11 cannot be applied") }
                try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'i')", [.integer(Int64(n))])
            }
        }, committed: { _ in })
        #expect(tries == 2)
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(try Self.rows(store) == [10, 12])
    }
}
