import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport
import ZeroMQ

/// Several session loggers over one PostgreSQL (PROTOCOL "Cluster (PostgreSQL)"): one log with
/// gap-free seqs in commit order, the same on every instance; any instance answers any op with
/// read-your-writes across instances; an outage answers `unavailable` and passes by itself.
/// Serialized: each test starts a server of its own.
@Suite(.serialized) struct SessionLoggerClusterTests {
    static let henning = user("henning")

    static func session(_ userId: UserID = henning, id: RecordID? = nil, minutesAgo: Int64) -> SessionLogRequest {
        let end = Instant.now().adding(seconds: -minutesAgo * 60)
        return SessionLogRequest(id: id, userId: userId, activity: .workout, start: end.adding(seconds: -600), end: end)
    }

    /// Every seq published on the instances' events (a SUB connected to each), until `count` arrived.
    static func published(by instances: [InProcessService], rig: ServiceRig, while act: () throws -> Void, count: Int) throws -> [Int64] {
        let subscribers = try instances.map { instance in
            let subscriber = try rig.socket(.sub)
            try subscriber.subscribe(Events.sessionLogged.name)
            try subscriber.connect(instance.events)
            try subscriber.awaitSubscribed()
            return subscriber
        }
        try act()
        var seqs: [Int64] = []
        let deadline = Date().addingTimeInterval(10)
        while seqs.count < count, Date() < deadline {
            for (subscriber, readable) in zip(subscribers, try Poller.readable(subscribers, timeoutMilliseconds: 100)) where readable {
                guard let frames = try subscriber.receiveMultipart(), frames.count == 2,
                      String(decoding: frames[0], as: UTF8.self) != Heartbeat.topic else { continue }
                seqs.append(try WireJSON.decode(ReceivedEvent.self, from: frames[1]).seq)
            }
        }
        return seqs
    }

    @Test func instancesShareOneLogAndAnswerForEachOther() throws {
        let rig = try ServiceRig(backend: .postgresql)
        let first = try rig.sessionLogger(), second = try rig.sessionLogger()
        let clients = [rig.client(first), rig.client(second)]

        var receipts: [LogReceipt] = []
        let seqs = try Self.published(by: [first, second], rig: rig, while: {
            for index in 0..<6 { receipts.append(try clients[index % 2].call(Ops.sessionLog, Self.session(minutesAgo: Int64(60 - index)))) }
        }, count: 6)
        // Gap-free across instances, in commit order; each event published once, by the instance that committed it.
        #expect(receipts.map(\.seq) == Array(1...6))
        #expect(seqs.sorted() == Array(1...6))

        // The same log from either instance: seqs, bytes and identity.
        let pages = try clients.map { try $0.call(Ops.eventsSince, EventsSinceRequest(after: 0)) }
        #expect(pages[0].events.map(\.seq) == Array(1...6))
        #expect(pages[0].events.map(\.id) == pages[1].events.map(\.id))
        #expect(pages[0].logId == pages[1].logId && pages[0].lastSeq == 6 && pages[1].lastSeq == 6)
        #expect(try clients.map { try $0.call(Ops.health, NoFields()).logId } == [pages[0].logId, pages[0].logId])
        // `health` on either instance tells of the shared log, within a heartbeat.
        try waitUntil(timeout: 3, "both instances' health says lastSeq 6") {
            try clients.allSatisfy { try $0.call(Ops.health, NoFields()).lastSeq == 6 }
        }

        // Read-your-writes across instances: an ack from one, then a read on the other.
        let request = Self.session(id: RecordID(), minutesAgo: 5)
        let logged = try clients[0].call(Ops.sessionLog, request)
        let listed = try clients[1].call(Ops.sessionList, SessionListRequest(userId: Self.henning, from: Instant.now().adding(seconds: -7200),
                                                                            until: Instant.now()))
        #expect(listed.sessions.map(\.id).contains(logged.id))
        #expect(listed.sessions.count == 7)
        let today = Instant.now().local(in: ZoneID.utc).day
        let entry = try clients[1].call(Ops.noalcLog, NoAlcLogRequest(userId: Self.henning, day: today, level: .easy))
        #expect(try clients[0].call(Ops.noalcList, DayRangeRequest(userId: Self.henning, from: today, until: today)).entries.map(\.id) == [entry.id])

        // A repeated id on the other instance is the same record: the first receipt, no second event.
        let repeated = try clients[1].call(Ops.sessionLog, request)
        #expect(repeated.duplicate && repeated.seq == logged.seq)
        #expect(try clients[0].call(Ops.eventsSince, EventsSinceRequest(after: 0)).lastSeq == 8)
    }

    /// An event its instance never published (it stopped between commit and publish) still reaches a
    /// follower of another instance: that one's heartbeat announces the shared log's newest seq.
    @Test func aFollowerOfOneInstanceLearnsOfAnothersEvents() throws {
        let rig = try ServiceRig(backend: .postgresql)
        let first = try rig.sessionLogger(), second = try rig.sessionLogger()
        // Subscribed to the first instance's events only, as if the second's were lost.
        let follower = try EventRecorder(context: rig.context, first, catchUpNow: false)
        let receipt = try rig.client(second).call(Ops.sessionLog, Self.session(minutesAgo: 5))
        let events = try follower.wait(timeout: 5, "the second instance's event") { $0.contains { $0.seq == receipt.seq } }
        #expect(events.map(\.seq) == [1])
    }

    /// Writers on both instances at once: every acknowledged session has its own seq, and the log is 1...N.
    @Test func concurrentWritersOnTwoInstancesGetGapFreeSeqs() throws {
        let rig = try ServiceRig(backend: .postgresql)
        let instances = [try rig.sessionLogger(), try rig.sessionLogger()]
        let perWriter = 150
        let acknowledged = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        let context = rig.context
        DispatchQueue.concurrentPerform(iterations: 4) { writer in
            let client = TestClient(context: context, instances[writer % 2])
            for index in 0..<perWriter {
                do {
                    let receipt = try client.call(Ops.sessionLog, Self.session(user("writer\(writer)"), minutesAgo: Int64(index % 600)))
                    acknowledged.withLock { $0.append(receipt.seq) }
                } catch {
                    failures.withLock { $0.append("writer \(writer) #\(index): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let total = 4 * perWriter
        #expect(acknowledged.withLock { $0 }.sorted() == (1...Int64(total)).map { $0 })
        var logged: [Int64] = [], after: Int64 = 0
        let client = rig.client(instances[1])
        while logged.count < total {
            let page = try client.call(Ops.eventsSince, EventsSinceRequest(after: after, limit: 1000))
            guard let last = page.events.last else { break }
            logged += page.events.map(\.seq)
            after = last.seq
        }
        #expect(logged == (1...Int64(total)).map { $0 })
    }

    /// PostgreSQL down: requests answer `unavailable` and nothing acknowledged is lost; back up: the
    /// same instance serves again without a restart.
    @Test func anOutageAnswersUnavailableAndPassesByItself() throws {
        let rig = try ServiceRig(backend: .postgresql)
        let postgres = try #require(rig.postgres)
        let logger = try rig.sessionLogger()
        let client = TestClient(context: rig.context, logger, timeoutMilliseconds: 10_000)
        let before = try client.call(Ops.sessionLog, Self.session(minutesAgo: 30))

        try postgres.halt()
        // `unavailable` is also what a client makes of no answer: the message tells them apart.
        do {
            _ = try client.call(Ops.sessionLog, Self.session(minutesAgo: 20))
            Issue.record("a session was stored while the database was down")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("the database is unavailable"), "\(error.message)")
        }
        #expect(try client.call(Ops.health, NoFields()).service == "session-logger")  // health needs no database

        try postgres.resume()
        var after: LogReceipt?
        try waitUntil(timeout: 15, "the logger serves again") {
            after = try? client.call(Ops.sessionLog, Self.session(minutesAgo: 10))
            return after != nil
        }
        let listed = try client.call(Ops.sessionList, SessionListRequest(userId: Self.henning, from: Instant.now().adding(seconds: -7200),
                                                                        until: Instant.now()))
        #expect(listed.sessions.map(\.id) == [before.id, after!.id])
        #expect(after?.seq == before.seq + 1)
    }
}
