import Foundation
import GRDB
import LHTClient
import LHTSchema
@testable import ServiceHost
import ServiceTestSupport
import Storage
import Testing
import TestSupport
import ZeroMQ

/// Followers that missed events catch up exactly once and in order (UpstreamFeed in a service,
/// Subscription in a client), and heartbeats tell them what they missed.
@Suite struct EventFeedTests {
    let henning = user("henning")

    func streakDays(_ events: [ReceivedEvent]) -> [Int] {
        events.compactMap { if case .streakUpdated(let state) = $0.data { state.streakDays } else { nil } }
    }

    func logDays(_ rig: ServiceRig, _ logger: InProcessService, count: Int) throws {
        for offset in 0..<count {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01").adding(days: offset), level: .steady))
        }
    }

    /// Receives from a raw SUB until a message whose topic satisfies `wanted` arrives.
    func receive(_ socket: Socket, timeout: TimeInterval = 5, where wanted: (String, Data) -> Bool) throws -> [Data] {
        let deadline = Date().addingTimeInterval(timeout)
        while case let remaining = Int(deadline.timeIntervalSinceNow * 1000), remaining > 0 {
            guard try Poller.readable([socket], timeoutMilliseconds: remaining)[0] else { continue }
            if let frames = try socket.receiveMultipart(dontWait: true), frames.count == 2,
               wanted(String(decoding: frames[0], as: UTF8.self), frames[1]) {
                return frames
            }
        }
        throw HarnessError("the expected message did not arrive within \(timeout) s")
    }

    /// The streak service's SUB hears the logger through a relay that drops seq 1 and 2 and passes
    /// seq 3: the gap makes it fetch 1…3 with events.since and apply each once, in order.
    @Test func anUpstreamFeedWhoseSubDroppedEventsCatchesUpOnTheGap() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        let fromLogger = try rig.socket(.sub)
        try fromLogger.subscribe(Events.noalcLogged.name)
        try fromLogger.connect(logger.events)
        let relay = try rig.socket(.pub)
        let relayEndpoint = try relay.bind(rig.endpoint("relay"))

        let began = Date()
        let streak = try rig.streak(loggerAPI: logger.api, loggerEvents: relayEndpoint)
        let updates = try rig.recorder(streak)
        try logDays(rig, logger, count: 3)
        let third = try receive(fromLogger) { _, body in
            (try? JSONDecoder().decode(ReceivedEvent.self, from: body))?.seq == 3
        }
        // Only seq 3 reaches the streak service (again until it shows, in case the relay was not yet heard).
        try waitUntil(timeout: 5, interval: 0.05, "the streak service catching up") {
            try relay.send(multipart: third, dontWait: true)
            return try updates.settle(for: 0.01).count { $0.type == Events.streakUpdated.name } >= 3
        }
        // Before the feed's 2 s retry could have asked on its own (a heartbeat ahead, or silence):
        // it was the gap that made it ask.
        #expect(Date().timeIntervalSince(began) < 2)
        let updated = try updates.settle(for: 0.1)
        #expect(streakDays(updated) == [1, 2, 3])
        #expect(updated.map(\.seq) == [1, 2, 3])
        #expect(try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))).streakDays == 3)
    }

    /// A page is applied without a savepoint per event; an event whose payload this follower cannot
    /// use rolls that back, and the page is applied again skipping just it: every other event of
    /// the page is applied exactly once, and the cursor passes them all.
    @Test func anUnusablePayloadIsSkippedAloneAndTheRestOfItsPageAppliedOnce() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        try logDays(rig, logger, count: 5)
        let host = try ServiceHost(service: .noalcStreak, apiEndpoint: rig.endpoint("feed-api"), eventsEndpoint: rig.endpoint("feed-events"),
                                   dataDirectory: rig.scratch.subdirectory("feed"), layout: StoreLayout(sqliteMigrations: []),
                                   logger: quietLogger("feed"), context: rig.context)
        var applied: [Int64] = []
        let feed = try UpstreamFeed(upstream: .sessionLogger, host: host, eventsEndpoints: [logger.events], apiEndpoints: [logger.api]) { event, tx in
            tx.afterCommit { applied.append(event.seq) }  // undone with the event when it throws
            if event.seq == 3 { throw WireError.invalid("data", "a payload this follower cannot use") }
        }
        #expect(feed.catchUp())
        #expect(applied == [1, 2, 4, 5])
        #expect(feed.appliedSeq == 5)
        #expect(try host.read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM cursor") } == 5)
    }

    /// The relay passes only the logger's heartbeats: one whose lastSeq is ahead of what the feed
    /// applied makes it catch up, once, in order.
    @Test func anUpstreamFeedCatchesUpOnAHeartbeatAhead() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        let fromLogger = try rig.socket(.sub)
        try fromLogger.subscribe(Heartbeat.topic)
        try fromLogger.connect(logger.events)
        let relay = try rig.socket(.pub)
        let relayEndpoint = try relay.bind(rig.endpoint("relay"))

        let streak = try rig.streak(loggerAPI: logger.api, loggerEvents: relayEndpoint)
        let updates = try rig.recorder(streak)
        try logDays(rig, logger, count: 3)
        try waitUntil(timeout: 8, interval: 0.01, "the streak service catching up") {
            // Every heartbeat of the logger (once a second), passed on as it is.
            if try Poller.readable([fromLogger], timeoutMilliseconds: 0)[0], let frames = try fromLogger.receiveMultipart(dontWait: true) {
                try relay.send(multipart: frames, dontWait: true)
            }
            return try updates.settle(for: 0.01).count { $0.type == Events.streakUpdated.name } >= 3
        }
        let updated = try updates.settle(for: 0.1)
        #expect(streakDays(updated) == [1, 2, 3])
        #expect(updated.map(\.seq) == [1, 2, 3])
    }

    /// A client Subscription made after the events were published: nothing arrives live, the next
    /// heartbeat shows lastSeq ahead, and `next` delivers 1…3 once, in order; later events live.
    @Test func aSubscriptionStartedLateCatchesUpOnTheHeartbeatExactlyOnce() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        try logDays(rig, logger, count: 3)
        let late = try EventRecorder(context: rig.context, logger, after: 0, catchUpNow: false)
        let first = try late.wait(timeout: 3) { $0.count >= 3 }
        #expect(first.map(\.seq) == [1, 2, 3])
        #expect(first.allSatisfy { $0.type == Events.noalcLogged.name })

        try logDays(rig, logger, count: 4)  // days 1–3 again (new ids: corrections) and day 4
        let all = try late.wait(timeout: 3) { $0.count >= 7 }
        #expect(all.map(\.seq) == Array(1...7))
        #expect(try late.settle(for: 0.2).count == 7)
    }

    /// After a second without events the publisher sends a heartbeat carrying its newest seq, and
    /// then one a second while it stays quiet.
    @Test func heartbeatsFollowASecondOfSilenceAndCarryLastSeq() throws {
        // inproc: the subscriber is connected before anything is published.
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        let socket = try rig.socket(.sub)
        try socket.subscribe("")
        try socket.connect(logger.events)

        try logDays(rig, logger, count: 2)
        let secondEvent = try receive(socket) { _, body in (try? JSONDecoder().decode(ReceivedEvent.self, from: body))?.seq == 2 }
        let eventArrived = Date()
        #expect(!secondEvent.isEmpty)
        let beat = try receive(socket, timeout: 3) { topic, _ in topic == Heartbeat.topic }
        let beatArrived = Date()
        let heartbeat = try JSONDecoder().decode(Heartbeat.self, from: beat[1])
        #expect(heartbeat.lastSeq == 2)
        #expect(heartbeat.source == "session-logger")
        #expect(beatArrived.timeIntervalSince(eventArrived) >= 0.9)
        let next = try receive(socket, timeout: 3) { topic, _ in topic == Heartbeat.topic }
        #expect(Date().timeIntervalSince(beatArrived) >= 0.9)
        #expect(try JSONDecoder().decode(Heartbeat.self, from: next[1]).lastSeq == 2)
    }
}
