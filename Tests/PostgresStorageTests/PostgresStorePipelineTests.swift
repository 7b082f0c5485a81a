import Foundation
import LHTSchema
import PostgresStorage
import Storage
import Testing
import TestSupport

/// A write's statements whose results nobody reads (`executeLater`, the log's rows, the head moved,
/// COMMIT) go out in one round trip through libpq's pipeline, and fail as they did one by one.
extension PostgresStoreTests {
    /// A write of one request: the log row's lock with BEGIN, then the body's rows, the log's and COMMIT.
    @Test func aWriteIsTwoRoundTripsAndAFailureInItsBatchLeavesNothing() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        let before = store.roundTrips
        let seq = try store.write(now: Self.start, copyOfUpstream: false, { tx in
            for n in 0..<3 { try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, ?)", [.integer(tx.nextSeq + 10 * Int64(n)), .text("a")]) }
            return try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: Self.session())
        }, committed: { _ in })
        #expect(seq == 1)
        #expect(store.roundTrips - before == 2)
        #expect(try Self.rows(store) == [1, 11, 21])

        // A duplicate key among the queued rows: the write fails with it, and nothing of it is stored.
        #expect {
            try store.write(now: Self.start, copyOfUpstream: false, { tx in
                try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'b')", [.integer(30)])
                try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'b')", [.integer(11)])
                try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: Self.session())
            }, committed: { _ in Issue.record("committed") })
        } throws: { ($0 as? PostgresError)?.kind == .statement(sqlState: "23505") }
        #expect(try Self.rows(store) == [1, 11, 21])
        #expect(try Self.log(in: store) == 2, "a failed write takes no seq")

        // Inside a request's savepoint the failure is that request's alone, as before.
        let results = try store.write(now: Self.start, copyOfUpstream: false, { tx in
            try tx.eachIsolated([40, 21, 41], isFatal: { _ in false }) { n in
                try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'c')", [.integer(Int64(n))])
            }
        }, committed: { _ in })
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(try Self.rows(store) == [1, 2, 11, 21, 40, 41])
    }

    /// A write's records go to the log many rows a statement, numbered by the store's connection
    /// (`Transaction.storeRecords`): all of a step's 101 (64 + 32 + 4 + 1) land in the write's two
    /// round trips, each with its seq, topic and envelope.
    @Test func aWritesManyRecordsLandInOrderInItsTwoRoundTrips() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        let before = store.roundTrips
        let appended = try store.write(now: Self.start, copyOfUpstream: false, { tx in
            try (0..<101).map { n -> PendingEvent in
                try tx.append(Events.sessionLogged, userId: UserID("u\(n)")!, activity: .workout, data: Self.session())
                return tx.events.last!
            }
        }, committed: { _ in })
        #expect(store.roundTrips - before == 2)
        let stored = try store.query { try $0.rows("SELECT seq, topic, envelope FROM log ORDER BY seq", []) { row in
            (seq: row.integer(0) ?? 0, topic: row.text(1) ?? "", envelope: row.withBytes(2) { Data($0) } ?? Data())
        } }
        #expect(stored.map(\.seq) == Array(1...101))
        #expect(stored.map(\.topic) == appended.map(\.topic) && stored.map(\.envelope).elementsEqual(appended.map(\.envelope)))
    }

    /// A service's read under the lock (`readUnderEachWriteLock`) goes out with it, in its round
    /// trip, and sees what committed before the lock was taken; the body finds its answer there already.
    @Test func aReadUnderTheLockSharesItsRoundTripAndSeesTheLastCommit() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        var read: [Int64] = []
        #expect(store.readUnderEachWriteLock("SELECT count(*) FROM logged", []) { row in read.append(row.integer(0) ?? -1) })
        try postgres.connect().execute("INSERT INTO session_logger.logged (seq, id) VALUES (7, 'other instance')")
        let before = store.roundTrips
        let seen = try store.write(now: Self.start, copyOfUpstream: false, { tx in
            try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'e')", [.integer(tx.nextSeq)])
            try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: Self.session())
            return read
        }, committed: { _ in })
        #expect(seen == [1])
        #expect(store.roundTrips - before == 2)
        #expect(try Self.rows(store) == [1, 7])
    }

    /// In a write of upstream events the lock and the read under it go out with the body's first
    /// read, not before it; the events still get the seqs after the newest committed, though another
    /// instance committed since this one last wrote.
    @Test func anUpstreamWriteSendsTheLockWithItsFirstReadAndNumbersFromTheLockedHead() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres), other = try Self.open(postgres)
        var read: [Int64] = []
        #expect(store.readUnderEachWriteLock("SELECT count(*) FROM logged", []) { row in read.append(row.integer(0) ?? -1) })
        #expect(try Self.log(in: other) == 1)
        let before = store.roundTrips
        let (seenBefore, counted, seq) = try store.write(now: Self.start, copyOfUpstream: true, { tx in
            let seenBefore = read
            try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'queued')", [.integer(20)])
            let counted = try tx.sql.first("SELECT count(*) FROM logged", []) { $0.integer(0) }
            // Queued before the first event: its seq is known already, so nothing goes out for it.
            try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'queued')", [.integer(21)])
            return (seenBefore, counted, try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: Self.session()))
        }, committed: { _ in })
        #expect(seenBefore == [] && read == [1])
        #expect(counted == 2)
        #expect(seq == 2)
        #expect(store.roundTrips - before == 2)
        #expect(try Self.rows(store) == [1, 20, 21])
        #expect(try Self.log(in: other) == 3)
    }

    /// A request's savepoint is released without a wait of its own when what its body queued can
    /// fail only with the whole transaction; a queued statement that may fail alone makes it wait.
    @Test func aSavepointWaitsOnlyForQueuedStatementsThatMayFailAlone() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        func roundTrips(queuing statementThatMayFailAlone: Bool) throws -> Int {
            let before = store.roundTrips
            try store.write(now: Self.start, copyOfUpstream: false, { tx in
                _ = try tx.eachIsolated([tx.nextSeq], isFatal: { _ in false }) { seq in
                    let insert = "INSERT INTO logged (seq, id) VALUES (?, 'f') ON CONFLICT DO NOTHING"
                    if statementThatMayFailAlone { try tx.sql.executeLater(insert, [.integer(seq)]) }
                    else { try tx.sql.executeLaterFailingOnlyWithTheTransaction(insert, [.integer(seq)]) }
                }
                try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: Self.session())
            }, committed: { _ in })
            return store.roundTrips - before
        }
        #expect(try roundTrips(queuing: true) == 3, "BEGIN with the lock; RELEASE; COMMIT")
        #expect(try roundTrips(queuing: false) == 2, "BEGIN with the lock; COMMIT")
        #expect(try Self.rows(store) == [1, 2])
    }

    /// The connection killed while a write's statements wait in the pipeline: the write is
    /// `unavailable`, nothing of it stored, and the store connects again.
    @Test func aConnectionKilledMidPipelineIsUnavailableAndTheStoreConnectsAgain() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let store = try Self.open(postgres)
        let admin = try postgres.connect()
        let pid = try #require(store.backendPID)
        #expect(throws: StoreUnavailable.self) {
            try store.write(now: Self.start, copyOfUpstream: false, { tx in
                try tx.sql.executeLater("INSERT INTO logged (seq, id) VALUES (?, 'd')", [.integer(tx.nextSeq)])
                try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .workout, data: Self.session())
                _ = try admin.execute("SELECT pg_terminate_backend($1, 10000)", [.integer(Int64(pid))])
            }, committed: { _ in Issue.record("committed") })
        }
        #expect(try Self.eventually { try Self.log(in: store) } == 1)
        #expect(try Self.rows(store) == [1])
    }

    static func session() -> StoredSession {
        StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .workout, start: start, end: start.adding(seconds: 600),
                      source: nil, loggedAt: start)
    }
}
