import Foundation
import LHTClient
import LHTSchema
import Logging
import Testing
import TestSupport
@testable import ServiceHost
import SQLiteStorage
import Storage

/// The host in-process on a real SQLite file: the outbox, transactions and request handling.
@Suite struct ServiceHostTests {
    let directory = temporaryDirectory("lht-host")

    func makeHost() throws -> ServiceHost {
        try ServiceHost(service: .noalcStreak, apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                        dataDirectory: directory, layout: StoreLayout(sqliteMigrations: []), logger: Logger(label: "test"))
    }

    /// A catalog event whose data carries `n`, so the tests can tell events apart.
    static func note(_ n: Int, user: String = "u1") -> StreakState {
        StreakState(userId: UserID(user)!, asOf: LocalDay(year: 2026, month: 1, day: 1)!, policy: "seed", streakDays: n,
                    rewardsEarned: 0, rewardsUsed: 0, rewardsLost: 0, rewardsAvailable: 0, lastLoggedDay: nil, todayLogged: false)
    }

    func append(_ tx: Transaction, _ n: Int) throws -> Int64 {
        try tx.append(Events.streakUpdated, userId: UserID("u1")!, activity: .noalc, data: Self.note(n))
    }

    func append(_ host: ServiceHost, _ values: [Int]) throws -> [Int64] {
        try host.write { tx in try values.map { try append(tx, $0) } }
    }

    /// `events.since` through the host's own request path.
    func since(_ host: ServiceHost, after: Int64, limit: Int) throws -> EventsSinceReply {
        let frame = Data(#"{"v":1,"op":"events.since","data":{"after":\#(after),"limit":\#(limit)}}"#.utf8)
        let reply = try JSONDecoder().decode(ReplyFrame<EventsSinceReply>.self, from: host.process([IncomingRequest(frame: frame)])[0])
        return try #require(reply.data)
    }

    func notes(_ reply: EventsSinceReply) -> [Int] {
        reply.events.compactMap { event in
            if case .streakUpdated(let state) = event.data { return state.streakDays }
            return nil
        }
    }

    @Test func seqIsGapFreeAcrossRollbacksAndReopening() throws {
        var host = try makeHost()
        #expect(try append(host, [1, 2, 3]) == [1, 2, 3])
        // A transaction that fails leaves no event and no hole.
        #expect(throws: WireError.self) {
            try host.write { tx in
                try append(tx, 99)
                throw WireError(.conflict, "no")
            }
        }
        // A savepoint that fails inside a transaction that commits: its event is gone too.
        try host.write { tx in
            _ = try append(tx, 4)
            _ = try? tx.isolated { () throws -> Void in
                _ = try append(tx, 98)
                throw WireError(.conflict, "no")
            }
            // A nested write joins this transaction rather than deadlocking on it.
            try host.write { inner in _ = try append(inner, 5) }
        }
        #expect(host.eventLog.lastSeq == 5)

        host = try makeHost()  // reopened on the same file
        #expect(host.eventLog.lastSeq == 5)
        #expect(try append(host, [6, 7]) == [6, 7])
        let all = try since(host, after: 0, limit: 1000)
        #expect(all.events.map(\.seq) == Array(1...7))
        #expect(notes(all) == Array(1...7))
        #expect(all.events.allSatisfy { $0.topic == "streak.updated.u1.noalc" && $0.source == "noalc-streak" })
    }

    @Test func eventsSincePagesWithLimit() throws {
        let host = try makeHost()
        _ = try append(host, Array(1...25))
        var after: Int64 = 0
        var pages: [[Int64]] = []
        while true {
            let page = try since(host, after: after, limit: 10)
            #expect(page.lastSeq == 25)
            guard let last = page.events.last else { break }
            pages.append(page.events.map(\.seq))
            after = last.seq
        }
        #expect(pages == [Array(1...10), Array(11...20), Array(21...25)])
    }

    /// A `streak.get` handler that stores an event carrying n (the day of January its `asOf` names),
    /// then refuses user "bad": a refusal must take its event with it.
    func handleStreakGetRefusingBad(_ host: ServiceHost) {
        let first = LocalDay(year: 2026, month: 1, day: 1)!
        host.handle(Ops.streakGet) { [self] query, tx in
            let n = (query.asOf?.ordinal ?? 0) - first.ordinal + 1
            _ = try append(tx, n)
            guard query.userId != UserID("bad") else { throw WireError.invalid("data.userId", "refused") }
            return Self.note(n)
        }
    }

    @Test func aFailingRequestChangesNothingAndTheBatchGoesOn() throws {
        let host = try makeHost()
        handleStreakGetRefusingBad(host)
        let frames = [("u1", 1), ("bad", 3), ("u1", 2)].map { Data(#"{"v":1,"op":"streak.get","data":{"userId":"\#($0.0)","asOf":"2026-01-0\#($0.1)"}}"#.utf8) }
            + [Data("{".utf8), Data(#"{"v":1,"op":"nope"}"#.utf8)]
        let replies = try host.process(frames.map { IncomingRequest(frame: $0) }).map { try JSONDecoder().decode(ReplyFrame<StreakState>.self, from: $0) }
        #expect(replies.map(\.ok) == [true, false, true, false, false])
        #expect(replies.compactMap(\.error?.code) == [.invalidArgument, .badJSON, .unknownOp])
        #expect(replies[1].error?.field == "data.userId")
        #expect(notes(try since(host, after: 0, limit: 10)) == [1, 2])
    }

    /// A batch runs in one savepoint until a request fails; then the ones before it run again and it
    /// alone. Failures first, last and next to each other leave exactly the others' events, in order.
    @Test func failuresAnywhereInABatchTakeOnlyTheirOwnChanges() throws {
        let host = try makeHost()
        handleStreakGetRefusingBad(host)
        let users = ["bad", "u1", "bad", "bad", "u1", "u1", "bad"]
        let frames = users.enumerated().map { index, user in
            IncomingRequest(frame: Data(#"{"v":1,"op":"streak.get","data":{"userId":"\#(user)","asOf":"2026-01-0\#(index + 1)"}}"#.utf8))
        }
        let replies = try host.process(frames).map { try JSONDecoder().decode(ReplyFrame<StreakState>.self, from: $0) }
        #expect(replies.map(\.ok) == users.map { $0 == "u1" })
        #expect(replies.compactMap(\.data?.streakDays) == [2, 5, 6])
        #expect(notes(try since(host, after: 0, limit: 10)) == [2, 5, 6])
        #expect(host.eventLog.lastSeq == 3)
    }

    /// From `DecodeAhead.smallestBatch` requests on, a batch's data is decoded on another thread
    /// while the loop stores the requests before: the replies, those whose data does not decode
    /// included, are byte for byte the ones the same requests get one at a time.
    @Test func aBatchDecodedAheadIsAnsweredAsRequestsDecodedOnTheLoop() throws {
        let days = ["2026-01-01", "2026-13-01", "2026-01-03", "2026-01-04", "x", "2026-01-06"]
        #expect(days.count >= DecodeAhead.smallestBatch)
        func requests() -> [IncomingRequest] {
            days.map { IncomingRequest(frame: Data(#"{"v":1,"op":"streak.get","data":{"userId":"u1","asOf":"\#($0)"}}"#.utf8)) }
        }
        let host = try makeHost()
        handleStreakGetRefusingBad(host)
        let together = host.process(requests())
        let replies = try together.map { try JSONDecoder().decode(ReplyFrame<StreakState>.self, from: $0) }
        #expect(replies.map(\.ok) == [true, false, true, true, false, true])
        #expect(replies.compactMap(\.error?.field) == ["data.asOf", "data.asOf"])
        #expect(notes(try since(host, after: 0, limit: 10)) == [1, 3, 4, 6])
        #expect(together == requests().map { host.process([$0])[0] })
    }

    /// Memory a handler changes at once goes back when its request fails (its savepoint) or its whole
    /// transaction does, newest change first; a later request of the same batch sees what stayed.
    @Test func undoActionsRunWhenTheirSavepointOrTransactionRollsBack() throws {
        let host = try makeHost()
        var applied: [Int] = []
        var seen: [[Int]] = []
        host.handle(Ops.streakGet) { query, tx in
            let n = (query.asOf?.ordinal ?? 0) - LocalDay(year: 2026, month: 1, day: 1)!.ordinal + 1
            seen.append(applied)
            applied.append(n)
            tx.onRollback { applied.removeAll { $0 == n } }
            guard query.userId != UserID("bad") else { throw WireError.invalid("data.userId", "refused") }
            return Self.note(n)
        }
        let frames = [("u1", 1), ("bad", 2), ("u1", 3)].map {
            IncomingRequest(frame: Data(#"{"v":1,"op":"streak.get","data":{"userId":"\#($0.0)","asOf":"2026-01-0\#($0.1)"}}"#.utf8))
        }
        _ = host.process(frames)
        #expect(applied == [1, 3])
        // However often the batch ran a request (a failure reruns the ones before it), none saw the refused one's change.
        #expect(seen.last == [1])
        #expect(!seen.contains { $0.contains(2) })

        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try host.write { tx in
                applied.append(7)
                tx.onRollback { applied.removeLast() }
                try tx.isolated {
                    applied.append(8)
                    tx.onRollback { applied.removeLast() }
                }
                throw Abort()
            }
        }
        #expect(applied == [1, 3])
    }

    /// A commit writes whole pages to the log: a new database uses small ones (docs/storage.md).
    @Test func aNewDatabaseHasSmallPages() throws {
        let host = try makeHost()
        #expect(try host.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") } == SQLiteStore.pageSize)
        #expect(SQLiteStore.pageSize == 1024)
    }

    @Test func environmentFillsFlagsNotGiven() {
        let arguments = ServiceCommandLine.withEnvironment(
            ["--api", "tcp://127.0.0.1:1", "--events=tcp://127.0.0.1:2"], flags: ["api", "events", "data-dir", "time-zone"],
            environment: ["LHT_API": "tcp://127.0.0.1:9", "LHT_DATA_DIR": "/tmp/x", "LHT_TIME_ZONE": "Europe/Berlin"])
        #expect(arguments == ["--api", "tcp://127.0.0.1:1", "--events=tcp://127.0.0.1:2", "--data-dir=/tmp/x", "--time-zone=Europe/Berlin"])
    }

    @Test(arguments: ["tcp://127.0.0.1:7301", "tcp://127.0.0.1:*", "tcp://[::1]:7301", "ipc:///tmp/lht.sock", "inproc://x"])
    func usableEndpoints(_ endpoint: String) throws {
        #expect(try Endpoint.validated(endpoint, flag: "api") == endpoint)
    }

    @Test(arguments: ["", "127.0.0.1:7301", "http://127.0.0.1:7301", "tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://:7301", "tcp://h:70000", "ipc://"])
    func unusableEndpoints(_ endpoint: String) {
        #expect(throws: (any Error).self) { try Endpoint.validated(endpoint, flag: "api") }
    }
}

/// A full disk answers `unavailable`, keeps what was acked, and acks again once there is space.
@Suite struct DiskFullTests {
    @Test func aFullDiskIsUnavailableAndRecoversWithoutARestart() throws {
        let tests = ServiceHostTests()
        let host = try tests.makeHost()
        host.handle(Ops.streakGet) { query, tx in
            _ = try tests.append(tx, 1)
            return ServiceHostTests.note(1)
        }
        let frame = Data(#"{"v":1,"op":"streak.get","data":{"userId":"u1"}}"#.utf8)
        func ask() throws -> ReplyFrame<StreakState> {
            try JSONDecoder().decode(ReplyFrame<StreakState>.self, from: host.process([IncomingRequest(frame: frame)])[0])
        }
        #expect(try ask().ok)
        // SQLite's page limit stands in for the disk: at the current size, the next new page is "disk full".
        let pages = try host.database.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count")! }
        try host.database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = \(pages)") }
        var refusal: WireError?
        for _ in 0..<200 where refusal == nil {
            refusal = try ask().error
        }
        #expect(refusal?.code == .unavailable)
        #expect(refusal?.message.contains("disk is full") == true)
        let stored = host.eventLog.lastSeq
        try host.database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = 1073741823") }
        #expect(try ask().ok)
        #expect(host.eventLog.lastSeq == stored + 1)
        #expect(try tests.since(host, after: 0, limit: 1000).events.count == Int(stored + 1))
    }
}
