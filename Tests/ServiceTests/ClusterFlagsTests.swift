import Foundation
import LHTClient
import LHTSchema
import NoAlcStreak
import Notifier
import ReminderPlanner
import ServiceHost
import ServiceTestSupport
import SessionLogger
import Storage
import Testing
import TestSupport
import ZeroMQ

/// PROTOCOL "Cluster", the flags of every service (the notifier's parsing: NotifierTests), and health naming its instance.
@Suite struct ClusterFlagsTests {
    /// Every flag a service declares may come from its `LHT_*` variable: the names are read from the
    /// declarations, and are the ones the services have always taken.
    @Test func everyDeclaredFlagHasItsVariable() {
        let common = ["api", "events", "data-dir", "keys", "insecure", "accept-upstream-reset", "metrics", "log-format", "log-level",
                      "database", "instance"]
        #expect(CommonOptions.flagNames == common)
        #expect(Set(SessionLoggerOptions.flagNames) == Set(common + ["intake"]))
        #expect(Set(PlannerOptions.flagNames) == Set(common + ["session-logger-api", "session-logger-events", "time-zone", "grace-minutes",
                                                               "clock", "tzdata-check-seconds"]))
        #expect(Set(NotifierOptions.flagNames) == Set(common + ["planner-api", "planner-events", "session-logger-api", "rate-limit-minutes"]))
        #expect(Set(NoAlcStreakOptions.flagNames) == Set(common + ["session-logger-api", "session-logger-events", "policy", "time-zone"]))
    }

    @Test func healthNamesTheInstanceThatAnswered() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        let streak = try rig.streak(loggerAPI: logger.api, loggerEvents: logger.events, extra: ["--instance", "streak-a"])
        #expect(try rig.client(streak).call(Ops.health, NoFields()).instance == "streak-a")
        #expect(try rig.client(logger).call(Ops.health, NoFields()).instance?.hasSuffix(":\(getpid())") == true)
        // On the wire only when known.
        let health = HealthReply(service: "s", version: "1", uptimeSeconds: 0, lastSeq: 0, counters: [:])
        #expect(!String(decoding: try WireJSON.encode(health), as: UTF8.self).contains("instance"))
        let named = HealthReply(service: "s", version: "1", uptimeSeconds: 0, lastSeq: 0, counters: [:], instance: "a")
        #expect(String(decoding: try WireJSON.encode(named), as: UTF8.self).hasSuffix(#","instance":"a"}"#))
    }
}

/// A follower given every instance of its upstream (PROTOCOL "Cluster"): a dead one costs a timeout, not
/// answers or events; events that come from several instances, out of order or twice, are applied once each.
@Suite struct SeveralInstancesTests {
    let henning = user("henning")

    /// An endpoint where nothing listens.
    func dead() throws -> String { "tcp://127.0.0.1:\(try freeLoopbackPort())" }

    func logDays(_ rig: ServiceRig, _ logger: InProcessService, _ offsets: Range<Int>) throws {
        for offset in offsets {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01").adding(days: offset), level: .steady))
        }
    }

    @Test func theStreakServiceWithADeadFirstLoggerInstanceGetsItsAnswersAndEvents() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        try logDays(rig, logger, 0..<2)  // fetched by the start-up catch-up, which the dead instance makes wait one timeout
        let streak = try rig.streak(loggerAPI: "\(try dead()),\(logger.api)", loggerEvents: "\(try dead()),\(logger.events)")
        let client = rig.client(streak)
        #expect(try client.call(Ops.health, NoFields()).upstreams.first?.appliedSeq == 2)
        try logDays(rig, logger, 2..<4)
        try waitUntil(timeout: 10, "the streak service applied the live events") {
            (try? client.call(Ops.health, NoFields()).upstreams.first?.appliedSeq) == 4
        }
        #expect(try client.call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-04"))).streakDays == 4)
        #expect(try client.call(Ops.health, NoFields()).lastError == nil)
    }

    /// Two relays stand for two instances of the logger, each publishing some of its events: out of
    /// order, some twice and again after they were applied, and seq 4 by neither. The api list starts
    /// with a dead instance, so the catch-up that fetches seq 4 is answered by the next one.
    @Test func eventsFromSeveralInstancesOutOfOrderOrTwiceAreAppliedOnceEach() throws {
        let rig = try ServiceRig()
        let logger = try rig.sessionLogger()
        let fromLogger = try rig.socket(.sub)
        try fromLogger.subscribe(Events.noalcLogged.name)
        try fromLogger.connect(logger.events)
        let relays = try (0..<2).map { _ in try rig.socket(.pub) }
        let relayEndpoints = try relays.map { try $0.bind(rig.endpoint("relay")) }
        let (api, directory) = ([try dead(), logger.api], rig.scratch.subdirectory("follower"))
        let follower = try startService(context: rig.context) { context in
            try CountingFollower(directory: directory, api: api, events: relayEndpoints, context: context)
        }
        defer { follower.stop() }
        let client = rig.client(follower)

        try fromLogger.awaitSubscribed()
        try logDays(rig, logger, 0..<5)
        var frames: [Int64: [Data]] = [:]
        while frames.count < 5 {
            guard try Poller.readable([fromLogger], timeoutMilliseconds: 5000)[0], let message = try fromLogger.receiveMultipart(dontWait: true)
            else { throw HarnessError("the logger's events did not arrive") }
            if String(decoding: message[0], as: UTF8.self) == Heartbeat.topic { continue }
            frames[try JSONDecoder().decode(ReceivedEvent.self, from: message[1]).seq] = message
        }
        let sent: [(relay: Int, seq: Int64)] = [(1, 2), (0, 1), (1, 2), (0, 3), (1, 1), (0, 5), (1, 3)]
        func relay() throws {
            for (index, seq) in sent { try relays[index].send(multipart: frames[seq]!, dontWait: true) }
        }
        try waitUntil(timeout: 15, interval: 0.05, "the follower applied seq 1…5") {
            try relay()
            return try client.call(Ops.health, NoFields()).upstreams.first?.appliedSeq == 5
        }
        for _ in 0..<5 {
            try relay()
            Thread.sleep(forTimeInterval: 0.05)  // time to apply the repeats, which the counts below show it did not
        }
        let health = try client.call(Ops.health, NoFields())
        #expect(health.counters.filter { $0.key.hasPrefix("applied.") } == Dictionary(uniqueKeysWithValues: (1...5).map { ("applied.\($0)", Int64(1)) }))
        #expect(health.upstreams.first?.appliedSeq == 5)
        #expect(health.lastError == nil)
    }
}

/// An `UpstreamFeed` of the session logger in a host of its own, counting in `health.counters` how
/// often it applied each seq (`applied.<seq>`).
private final class CountingFollower: Service {
    let host: ServiceHost
    private var feed: UpstreamFeed!

    init(directory: URL, api: [String], events: [String], context: Context) throws {
        host = try ServiceHost(service: .noalcStreak, apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                               dataDirectory: directory, layout: StoreLayout(sqliteMigrations: []), logger: quietLogger("follower"), context: context)
        feed = try UpstreamFeed(upstream: .sessionLogger, host: host, eventsEndpoints: events, apiEndpoints: api) { [unowned host] event, tx in
            tx.afterCommit { host.count("applied.\(event.seq)") }
        }
        feed.catchUp()
    }
}
