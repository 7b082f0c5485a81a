import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// Start-up, crash and flag behaviour: each test owns its processes' lifecycles.
@Suite struct NoAlcStreakLifecycleTests {
    @Test func entriesLoggedBeforeStartAreCaughtUpBeforeReady() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        // Six events.since pages (1000 each): more than the catch-up's reader keeps waiting (4), so
        // it has to wait for the applying side as well as page.
        var requests: [[String: Any]] = []
        for user in 0..<12 {
            for (index, day) in days(from: "2025-01-01", count: 500).enumerated() {
                requests.append(["userId": "early\(user)", "day": day, "level": index == 50 && user % 2 == 0 ? "wild" : "steady"])
            }
        }
        try pipeline(logger.api, context: context, "noalc.log", requests)

        let streak = try startStreak(following: logger)
        let client = try WireClient(streak.api, context: context)
        // No waiting: the ready line comes only after the catch-up.
        #expect(try client.ok("streak.get", ["userId": "early1", "asOf": "2026-05-15"])["streakDays"]?.intValue == 500)
        // The last user's entries are the last page.
        #expect(try client.ok("streak.get", ["userId": "early11", "asOf": "2026-05-15"])["streakDays"]?.intValue == 500)
        let broken = try client.ok("streak.get", ["userId": "early0", "asOf": "2026-05-15"])
        #expect(broken["streakDays"]?.intValue == 449)
        #expect(broken["rewardsLost"]?.intValue == 1)
        // One streak.updated per entry here: every entry changes its user's state.
        #expect(try client.ok("health")["lastSeq"]?.intValue == 6000)
    }

    @Test func sigkillLosesNothingAndAppliesNothingTwice() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        let streak = try startStreak(following: logger)
        let client = try WireClient(streak.api, context: context)

        // Random days of a quarter, so most entries correct a day logged before; the streak is killed
        // while the session logger is still taking the pipelined requests.
        var random = SplitMix64(seed: 0x57_2EA4)
        func entries(_ count: Int) -> [[String: Any]] {
            (0..<count).map { _ in
                let roll = random.next() % 20
                return ["userId": "crash\(random.next() % 20)", "day": LocalDay("2026-01-01")!.adding(days: Int(random.next() % 90)).description,
                        "level": roll == 0 ? "wild" : roll == 1 ? "easy" : "steady"]
            }
        }
        let inFlight = try Pipeline(logger.api, context: context, "noalc.log", entries(3000))
        try waitUntil(timeout: 20, interval: 0.02, "the streak service applying the first entries") { try client.ok("health")["lastSeq"]!.intValue! > 0 }
        streak.kill()
        try inFlight.finish()
        // Logged while the streak is down: it must catch these up at restart.
        try pipeline(logger.api, context: context, "noalc.log", entries(500))
        try streak.restart()
        let restartedClient = try WireClient(streak.api, context: context)

        // A fresh service on an empty data dir computes everything once, from the same log.
        let fresh = try startStreak(following: logger)
        let freshClient = try WireClient(fresh.api, context: context)
        for user in 0..<20 {
            for asOf in ["2026-02-01", "2026-04-01"] {
                let request: [String: Any] = ["userId": "crash\(user)", "asOf": asOf]
                #expect(try restartedClient.ok("streak.get", request) == freshClient.ok("streak.get", request), "crash\(user) as of \(asOf)")
            }
            let month: [String: Any] = ["userId": "crash\(user)", "month": "2026-02"]
            #expect(try restartedClient.ok("calendar.get", month) == freshClient.ok("calendar.get", month), "crash\(user)")
        }
        // Same state changes in the same order: the outboxes match event for event, seqs without gaps.
        let restartedEvents = try allEvents(restartedClient)
        let freshEvents = try allEvents(freshClient)
        #expect(restartedEvents.map { $0["seq"]?.intValue } == (1...Int64(restartedEvents.count)).map { $0 })
        #expect(restartedEvents.count == freshEvents.count)
        #expect(restartedEvents.map { [$0["topic"], $0["data"]] } == freshEvents.map { [$0["topic"], $0["data"]] })
    }

    @Test func startsWithoutTheSessionLoggerAndCatchesUpWhenItAnswers() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        try pipeline(logger.api, context: context, "noalc.log", days(from: "2026-05-01", count: 3).map {
            ["userId": "late", "day": $0, "level": "steady"]
        })
        let (api, events) = (logger.api, logger.events)
        #expect(logger.stop() == 0)

        let started = Date()
        let streak = try startStreak(following: logger)
        #expect(Date().timeIntervalSince(started) >= 1.5, "ready only after the 2 s catch-up timeout")
        let client = try WireClient(streak.api, context: context)
        #expect(try client.ok("streak.get", ["userId": "late", "asOf": "2026-05-03"])["streakDays"]?.intValue == 0)

        // The same endpoints again: the streak keeps retrying and catches up.
        let revived = try ServiceProcess("session-logger", dataDirectory: logger.dataDirectory, arguments: ["--api", api, "--events", events])
        var state = JSONValue.null
        try waitUntil(timeout: 10, interval: 0.02, "the revived logger's entries caught up") {
            state = try client.ok("streak.get", ["userId": "late", "asOf": "2026-05-03"])
            return state["streakDays"]?.intValue == 3
        }
        #expect(state["streakDays"]?.intValue == 3)
        #expect(revived.stop() == 0)
    }

    @Test func unusableFlagsExitTwoBeforeAnythingIsCreated() throws {
        for arguments in [["--policy", "nope"], ["--time-zone", "Mars/Olympus"], ["--policy=classic", "--time-zone=Mars/Olympus"],
                          ["--session-logger-api", "http://nope"], ["--session-logger-events", "tcp://127.0.0.1:notaport"]] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("streak-flags-\(UUID().uuidString.prefix(8))")
            let run = try CapturedProcess(BuildProducts.executable("noalc-streak").path,
                                          arguments + ["--data-dir", directory.path, "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*"]).finish()
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.path), "\(arguments)")
        }
    }
}
