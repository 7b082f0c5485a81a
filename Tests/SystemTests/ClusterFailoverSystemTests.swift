import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// The whole system as an operator runs it past one machine, from the built executables over one
/// PostgreSQL: two session loggers, three planners (one active, two standing by), two notifiers,
/// two streak services, every follower given every instance of its upstreams. Under load, one
/// instance of each service is SIGKILLed a few seconds after an occurrence fell due, before the
/// next. Nothing acknowledged is lost, each occurrence is decided once, each `reminder.due` is
/// notified once, the streak log is what one streak service alone publishes, and a standby
/// planner takes over within 15 s.
@Suite(.serialized, SystemTestBackend.onceOnly) struct ClusterFailoverSystemTests {
    /// `count` endpoints `tcp://127.0.0.1:<free port>`: a standby binds only once it takes over, so
    /// its followers are given its endpoints before it prints them.
    static func endpoints(_ count: Int) throws -> [String] { try (0..<count).map { _ in "tcp://127.0.0.1:\(try freeLoopbackPort())" } }

    @Test func losingOneInstanceOfEachServiceUnderLoadLosesAndDoublesNothing() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let loggers = [try ServiceProcess("session-logger", arguments: database + ["--instance", "logger-a"]),
                       try ServiceProcess("session-logger", arguments: database + ["--instance", "logger-b"])]
        let fromLoggers = ["--session-logger-api", loggers.map(\.api).joined(separator: ","),
                           "--session-logger-events", loggers.map(\.events).joined(separator: ",")]
        let (plannerAPIs, plannerEvents) = (try Self.endpoints(3), try Self.endpoints(3))
        let first = try ServiceProcess("reminder-planner", arguments: database + fromLoggers + [
            "--instance", "planner-0", "--api", plannerAPIs[0], "--events", plannerEvents[0]])
        let successor = Mutex<(process: ServiceProcess, ready: Date)?>(nil)
        for index in 1...2 {
            Thread {
                guard let process = try? ServiceProcess("reminder-planner", arguments: database + fromLoggers + [
                    "--instance", "planner-\(index)", "--api", plannerAPIs[index], "--events", plannerEvents[index]], timeout: 240)
                else { return }
                successor.withLock { if $0 == nil { $0 = (process, Date()) } }
            }.start()
        }
        let fromPlanners = ["--planner-api", plannerAPIs.joined(separator: ","), "--planner-events", plannerEvents.joined(separator: ","),
                            "--session-logger-api", loggers.map(\.api).joined(separator: ",")]
        let notifiers = [try ServiceProcess("notifier", arguments: database + fromPlanners + ["--rate-limit-minutes", "0"]),
                         try ServiceProcess("notifier", arguments: database + fromPlanners + ["--rate-limit-minutes", "0"])]
        let streaks = [try ServiceProcess("noalc-streak", arguments: database + fromLoggers),
                       try ServiceProcess("noalc-streak", arguments: database + fromLoggers)]
        let reference = try ServiceProcess("noalc-streak", arguments: ["--metrics", "off"] + fromLoggers)
        let context = try Context()

        // Reminders at the next two minute boundaries, at least 20 s away, for four users.
        let firstDue = Instant.nextMinuteAtLeast20SecondsAway()
        let secondDue = firstDue.adding(seconds: 60)
        let planner = try WireClient(first.api, context: context)
        let users = (0..<4).map { "user\($0)" }
        var reminders: [String] = []
        for user in users {
            _ = try planner.ok("user.put", ["userId": user, "timeZone": "UTC", "locale": "de"])
            for (activity, due) in [("mindfulness", firstDue), ("noalc", secondDue)] {
                reminders.append(try #require(try planner.ok("reminder.put", ["userId": user, "activity": activity, "time": due.utcReminderTime])["id"]?.stringValue))
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
                    Thread.sleep(forTimeInterval: 0.002)
                }
            }.start()
        }

        // A few seconds after the first occurrences fell due: one instance of each service dies.
        Thread.sleep(forTimeInterval: max(0, Double(firstDue.millisecondsSince1970 + 5_000 - Instant.now().millisecondsSince1970) / 1000))
        let killed = Date()
        for process in [first, loggers[0], notifiers[0], streaks[0]] { process.kill() }
        Thread.sleep(forTimeInterval: max(0, Double(secondDue.millisecondsSince1970 + 10_000 - Instant.now().millisecondsSince1970) / 1000))
        stop.store(true, ordering: .relaxed)
        _ = writers.wait(timeout: .now() + 20)

        // A standby took over within 15 s.
        let (active, ready) = try #require(successor.withLock { $0 }, "no standby planner took over")
        #expect(ready.timeIntervalSince(killed) <= 15, "took over \(ready.timeIntervalSince(killed)) s after the kill")

        // Every acknowledged record is in the logger's log, once.
        let logger = try WireClient(loggers[1].api, context: context)
        let logged = try logger.allEvents().compactMap { $0["data"]?["id"]?.stringValue }
        let acked = acknowledged.withLock { $0 }
        #expect(Set(acked).isSubset(of: Set(logged)), "lost: \(Set(acked).subtracting(logged).count)")
        #expect(Set(logged).count == logged.count)

        // Each of the eight occurrences decided once; each reminder.due notified once.
        let plannerLog = try WireClient(active.api, context: context).allEvents()
        let decisions = plannerLog.filter { ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"].contains($0["type"]?.stringValue ?? "") }
        let decided = decisions.compactMap { $0["data"]?["reminderId"]?.stringValue }
        #expect(decided.sorted() == reminders.sorted(), "\(decisions.map { $0["type"]?.stringValue ?? "?" })")
        let due = decisions.filter { $0["type"]?.stringValue == "reminder.due" }.compactMap { $0["data"]?["reminderId"]?.stringValue }
        #expect(due.count == reminders.count, "no session or NoAlc day covers these occurrences")
        let notifier = try WireClient(notifiers[1].api, context: context)
        try Self.waitUntil { try notifier.allEvents().count >= due.count }
        let notified = try notifier.allEvents().compactMap { $0["data"]?["reminderId"]?.stringValue }
        #expect(notified.sorted() == due.sorted())

        // The surviving streak service's log is what one streak service on its own published.
        let streakLogs = try [streaks[1], reference].map { streak in
            let client = try WireClient(streak.api, context: context)
            try Self.waitUntil { try client.ok("health")["upstreams"]?[0]?["appliedSeq"]?.intValue == Int64(logged.count) }
            return Dictionary(grouping: try client.allEvents().compactMap { $0["data"] }, by: { $0["userId"]?.stringValue ?? "" })
        }
        #expect(!streakLogs[1].isEmpty && streakLogs[0] == streakLogs[1])
    }

    static func waitUntil(_ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while try !condition(), Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
    }
}
