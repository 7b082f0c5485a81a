import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// The whole system as an operator runs it past one machine, from the built executables over one
/// PostgreSQL: two session loggers, three planners (all active, each deciding for its share of the
/// partitions), two notifiers, two streak services, every follower and client given every instance
/// of its upstreams. Under load, one instance of each service is SIGKILLed a few seconds after an
/// occurrence fell due, before the next. Nothing acknowledged is lost, each occurrence is decided
/// once, each `reminder.due` is notified once, the streak log is what one streak service alone
/// publishes, and the surviving planners hold all 64 partitions within 15 s.
@Suite(.serialized, SystemTestBackend.onceOnly) struct ClusterFailoverSystemTests {
    @Test func losingOneInstanceOfEachServiceUnderLoadLosesAndDoublesNothing() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let loggers = [try ServiceProcess("session-logger", arguments: database + ["--instance", "logger-a"]),
                       try ServiceProcess("session-logger", arguments: database + ["--instance", "logger-b"])]
        let fromLoggers = ["--session-logger-api", loggers.map(\.api).joined(separator: ","),
                           "--session-logger-events", loggers.map(\.events).joined(separator: ",")]
        // Every planner starts, binds and prints ready at once; they share the partitions.
        let planners = try (0..<3).map { index in
            try ServiceProcess("reminder-planner", arguments: database + fromLoggers + ["--instance", "planner-\(index)"])
        }
        let fromPlanners = ["--planner-api", planners.map(\.api).joined(separator: ","), "--planner-events", planners.map(\.events).joined(separator: ","),
                            "--session-logger-api", loggers.map(\.api).joined(separator: ",")]
        let notifiers = [try ServiceProcess("notifier", arguments: database + fromPlanners + ["--rate-limit-minutes", "0"]),
                         try ServiceProcess("notifier", arguments: database + fromPlanners + ["--rate-limit-minutes", "0"])]
        let streaks = [try ServiceProcess("noalc-streak", arguments: database + fromLoggers),
                       try ServiceProcess("noalc-streak", arguments: database + fromLoggers)]
        let reference = try ServiceProcess("noalc-streak", arguments: ["--metrics", "off"] + fromLoggers)
        let context = try Context()

        let plannerClients = try planners.map { try WireClient($0.api, context: context) }
        try settledShares(plannerClients, timeout: 10)

        // Reminders at the next two minute boundaries, at least 20 s away, for a user in each of the
        // 64 partitions (so each planner decides some of them), put through the planners by turns.
        let firstDue = Instant.nextMinuteAtLeast20SecondsAway()
        let secondDue = firstDue.adding(seconds: 60)
        let users = usersOnePerPartition("user")
        var reminders: [String] = []
        for (index, user) in users.enumerated() {
            _ = try plannerClients[index % 3].ok("user.put", ["userId": user, "timeZone": "UTC", "locale": "de"])
            for (activity, due) in [("mindfulness", firstDue), ("noalc", secondDue)] {
                reminders.append(try #require(try plannerClients[(index + 1) % 3].ok(
                    "reminder.put", ["userId": user, "activity": activity, "time": due.utcReminderTime])["id"]?.stringValue))
            }
        }

        // Load: a writer per logger, sessions (an hour old: they cover nothing due) and NoAlc days.
        let acknowledged = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let writers = DispatchGroup()
        for (index, logger) in loggers.enumerated() {
            writers.enter()
            Thread {
                defer { writers.leave() }
                guard let client = try? WireClient(logger.api, context: context) else { return }
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    n += 1
                    let user = users[n % users.count]
                    let request: (op: String, data: [String: Any]) = n % 4 == 0
                        ? ("noalc.log", ["id": RecordID().description, "userId": user, "level": n % 8 == 0 ? "wild" : "steady",
                                         "day": LocalDay("2024-01-01")!.adding(days: n / 4 % 300 + 300 * index).description])
                        : ("session.log", ClusterSystemTests.session(user, minutesAgo: 120 + n % 600))
                    // The killed logger's writer gets no answer: it stops, that request never acknowledged.
                    guard (try? client.ok(request.op, request.data)) != nil else { return }
                    acknowledged.withLock { $0.append(request.data["id"] as! String) }
                    Thread.sleep(forTimeInterval: 0.002)  // a steady writer, not a flood
                }
            }.start()
        }

        // A few seconds after the first occurrences fell due: one instance of each service dies.
        Thread.sleep(forTimeInterval: max(0, Double(firstDue.millisecondsSince1970 + 5_000 - Instant.now().millisecondsSince1970) / 1000))
        let killed = Date()
        for process in [planners[0], loggers[0], notifiers[0], streaks[0]] { process.kill() }
        // The surviving planners take the dead one's share within 15 s.
        let survivors = Array(plannerClients.dropFirst())
        try settledShares(survivors, timeout: 15)
        #expect(Date().timeIntervalSince(killed) <= 15, "the survivors held all 64 partitions \(Date().timeIntervalSince(killed)) s after the kill")
        // Writing on until well past the second instant, which the survivors alone decide.
        Thread.sleep(forTimeInterval: max(0, Double(secondDue.millisecondsSince1970 + 10_000 - Instant.now().millisecondsSince1970) / 1000))
        stop.store(true, ordering: .relaxed)
        _ = writers.wait(timeout: .now() + 20)

        // Every acknowledged record is in the logger's log, once.
        let logger = try WireClient(loggers[1].api, context: context)
        let logged = try logger.allEvents().compactMap { $0["data"]?["id"]?.stringValue }
        let acked = acknowledged.withLock { $0 }
        #expect(Set(acked).isSubset(of: Set(logged)), "lost: \(Set(acked).subtracting(logged).count)")
        #expect(Set(logged).count == logged.count)

        // Each of the occurrences decided once (the one log, read through a survivor); each
        // reminder.due notified once.
        let plannerLog = try survivors[0].allEvents()
        let decisions = plannerLog.filter { ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"].contains($0["type"]?.stringValue ?? "") }
        let decided = decisions.compactMap { $0["data"]?["reminderId"]?.stringValue }
        #expect(decided.sorted() == reminders.sorted(), "\(decisions.map { $0["type"]?.stringValue ?? "?" })")
        let due = decisions.filter { $0["type"]?.stringValue == "reminder.due" }.compactMap { $0["data"]?["reminderId"]?.stringValue }
        #expect(due.count == reminders.count, "no session or NoAlc day covers these occurrences")
        let notifier = try WireClient(notifiers[1].api, context: context)
        try? waitUntil(timeout: 30, interval: 0.2, "every due occurrence notified") { try notifier.allEvents().count >= due.count }
        let notified = try notifier.allEvents().compactMap { $0["data"]?["reminderId"]?.stringValue }
        #expect(notified.sorted() == due.sorted())

        // The surviving streak service's log is what one streak service on its own published.
        let streakLogs = try [streaks[1], reference].map { streak in
            let client = try WireClient(streak.api, context: context)
            try? waitUntil(timeout: 30, interval: 0.2, "every logged entry applied") { try client.ok("health")["upstreams"]?[0]?["appliedSeq"]?.intValue == Int64(logged.count) }
            return Dictionary(grouping: try client.allEvents().compactMap { $0["data"] }, by: { $0["userId"]?.stringValue ?? "" })
        }
        #expect(!streakLogs[1].isEmpty && streakLogs[0] == streakLogs[1])
    }
}
