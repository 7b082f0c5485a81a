import Foundation
import LHTClient
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// The session logger library in-process, over real sockets, called by catalog op.
@Suite struct SessionLoggerServiceTests {
    /// A mindfulness session that ended `minutesAgo` minutes ago and lasted 15 minutes.
    static func session(_ userId: String = "henning", id: RecordID? = nil, minutesAgo: Int64 = 60) -> SessionLogRequest {
        let end = Instant.now().adding(seconds: -minutesAgo * 60)
        return SessionLogRequest(id: id, userId: user(userId), activity: .mindfulness, start: end.adding(seconds: -900), end: end)
    }

    @Test(arguments: Transport.allCases)
    func logsASessionAndPublishesItWithTheNextSeq(_ transport: Transport) throws {
        let rig = try ServiceRig(transport)
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let events = try rig.recorder(logger)

        let first = try client.call(Ops.sessionLog, Self.session())
        let request = Self.session(minutesAgo: 30)
        let second = try client.call(Ops.sessionLog, request)
        #expect(!first.duplicate && !second.duplicate)
        #expect([first.seq, second.seq] == [1, 2])

        let logged = try events.wait(for: Events.sessionLogged, count: 2)
        #expect(logged.map(\.seq) == [1, 2])
        #expect(logged.allSatisfy { $0.source == "session-logger" })
        let event = try #require(logged.last)
        #expect(event.topic == Events.sessionLogged.topic(userId: user("henning"), activity: .mindfulness).description)
        guard case .sessionLogged(let stored) = event.data else {
            Issue.record("session.logged carries \(String(describing: event.data))")
            return
        }
        #expect(stored.id == second.id)
        #expect(stored.start == request.start && stored.end == request.end && stored.userId == request.userId)
        #expect(try client.call(Ops.health, NoFields()).lastSeq == 2)
    }

    @Test func aDuplicateIdGetsTheFirstReceiptAndNoSecondEvent() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let request = Self.session(id: RecordID())

        let first = try client.call(Ops.sessionLog, request)
        let again = try client.call(Ops.sessionLog, request)
        #expect(!first.duplicate)
        #expect(again.duplicate)
        #expect(again.id == first.id && again.seq == first.seq)
        // The same id with other content is a conflict, not a second session.
        let changed = SessionLogRequest(id: request.id, userId: request.userId, activity: .workout, start: request.start, end: request.end)
        let conflict = try client.refusal(Ops.sessionLog, changed)
        #expect(conflict.code == .conflict && conflict.field == "data.id")

        let since = try client.call(Ops.eventsSince, EventsSinceRequest(after: 0))
        #expect(since.lastSeq == 1)
        #expect(since.events.map(\.seq) == [1])
    }

    @Test func aStartMoreThanFiveMinutesAheadIsInvalidArgumentNamingDataStart() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let start = Instant.now().adding(seconds: 10 * 60)
        let error = try client.refusal(Ops.sessionLog, SessionLogRequest(userId: user("henning"), activity: .workout,
                                                                         start: start, end: start.adding(seconds: 600)))
        #expect(error.code == .invalidArgument)
        #expect(error.field == "data.start")
        // Refused means not stored: no event, nothing listed.
        #expect(try client.call(Ops.health, NoFields()).lastSeq == 0)
        let listed = try client.call(Ops.sessionList, SessionListRequest(userId: user("henning"), from: start.adding(seconds: -3600),
                                                                        until: start.adding(seconds: 3600)))
        #expect(listed.sessions.isEmpty)
    }

    /// Fire-and-forget intake (PUB → the logger's SUB): sent until it shows up, which is safe because
    /// a session is idempotent by id; it is stored and published exactly once.
    @Test func intakeStoresAFireAndForgetSessionOnce() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        let intake = try #require(logger.endpoints["intake"])
        let events = try rig.recorder(logger)
        let publisher = try rig.socket(.pub)
        try publisher.connect(intake)
        let request = Self.session(id: RecordID())
        let frame = try wireEncoder().encode(RequestFrame(op: Ops.sessionLog.name, data: request))

        try waitUntil("the intake session's event") {
            try publisher.send(multipart: [Data("intake".utf8), frame])
            return try !events.settle(for: 0.05).filter { $0.type == Events.sessionLogged.name }.isEmpty
        }
        let logged = events.of(Events.sessionLogged)
        #expect(logged.count == 1)
        guard case .sessionLogged(let stored) = logged.first?.data else {
            Issue.record("no session.logged data")
            return
        }
        #expect(stored.id == request.id)
        let health = try rig.client(logger).call(Ops.health, NoFields())
        #expect(health.lastSeq == 1)
        #expect((health.counters["intakeAccepted"] ?? 0) >= 1)
        #expect(health.counters["intakeRejected"] == 0)
    }
}
