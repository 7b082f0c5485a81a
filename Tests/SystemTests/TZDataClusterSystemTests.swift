import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// Two planners over one PostgreSQL whose hosts have different tzdata, each a TZDIR of its own:
/// Berlin with summer time from 2026 on one, without it on the other (PROTOCOL "Zone rules
/// (tzdata)", "Cluster (PostgreSQL)"). A rule day is decided once, whichever instance decides it:
/// the instance that decided a day by its rules is killed, and the one that takes its users over
/// puts that day's occurrence later than what was decided.
@Suite(.serialized, SystemTestBackend.onceOnly) struct TZDataClusterSystemTests {
    @Test func aRuleDayIsDecidedOnceByInstancesWithDifferentTZData() throws {
        let summer = TZDataSystemTests(), winter = TZDataSystemTests()
        try summer.install(TZDataSystemTests.berlin(daylightSavingFrom2026: true), version: "2026lht-dst")
        try winter.install(TZDataSystemTests.berlin(daylightSavingFrom2026: false), version: "2026lht-nodst")
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let logger = try ServiceProcess("session-logger", arguments: database)
        let common = database + ["--session-logger-api", logger.api, "--session-logger-events", logger.events, "--clock", "manual:2026-03-31T04:00:00Z"]
        let summerPlanner = try ServiceProcess("reminder-planner", arguments: common + ["--instance", "summer"], environment: ["TZDIR": summer.tzdir.path])
        let winterPlanner = try ServiceProcess("reminder-planner", arguments: common + ["--instance", "winter"], environment: ["TZDIR": winter.tzdir.path])
        let context = try Context()
        let summerClient = try WireClient(summerPlanner.api, context: context), winterClient = try WireClient(winterPlanner.api, context: context)
        try settledShares([summerClient, winterClient], timeout: 15)

        // A user in every partition, each with a reminder at 07:00 Berlin time: 05:00Z in summer
        // time, 06:00Z without it.
        var reminders: [String] = []
        for user in usersOnePerPartition("tz") {
            _ = try summerClient.ok("user.put", ["userId": user, "timeZone": "Europe/Berlin", "locale": "de"])
            reminders.append(try #require(try summerClient.ok("reminder.put", ["userId": user, "activity": "workout", "time": "07:00"])["id"]?.stringValue))
        }
        // Each instance's clock to 05:30Z: the summer-time one decides its share of Tuesday at 05:00Z.
        let decidedBySummer = try summerClient.ok("clock.set", ["now": "2026-03-31T05:30:00Z"])["decided"]?.intValue ?? 0
        #expect(decidedBySummer > 0 && decidedBySummer < Int64(reminders.count))
        #expect(try winterClient.ok("clock.set", ["now": "2026-03-31T05:30:00Z"])["decided"]?.intValue == 0)

        // The summer-time instance dies; the other takes its users over and moves on to Wednesday.
        summerPlanner.kill()
        try waitUntil(timeout: 15, interval: 0.2, "the winter-time planner owning every partition") { try winterClient.ownedPartitions() == 64 }
        _ = try winterClient.ok("clock.set", ["now": "2026-04-01T07:00:00Z"])

        let decided = try winterClient.allEvents().filter {
            QuietClusterSystemTests.decisionTypes.contains($0["type"]?.stringValue ?? "")
        }
        let byDay = Dictionary(grouping: decided) { "\($0["data"]?["reminderId"]?.stringValue ?? "") \($0["data"]?["day"]?.stringValue ?? "")" }
        let expected = reminders.flatMap { ["\($0) 2026-03-31", "\($0) 2026-04-01"] }
        #expect(Set(byDay.keys) == Set(expected), "missing \(Set(expected).subtracting(byDay.keys).count)")
        let twice = byDay.filter { $0.value.count != 1 }.mapValues { $0.compactMap { $0["data"]?["at"]?.stringValue } }
        #expect(twice.isEmpty, "\(twice.count) rule days decided more than once, e.g. \(twice.first.map { "\($0.key): \($0.value)" } ?? "")")
    }

    /// A tzdata update that one instance noticed while another owned half the users, and that the
    /// other never acted on (paused, then killed): the instance that takes those users over plans
    /// them again too, so every reminder whose occurrences moved gets its `reminder.changed`.
    @Test func aPartitionTakenOverAfterAnUpdateIsPlannedAgain() throws {
        let zones = TZDataSystemTests()
        try zones.install(TZDataSystemTests.berlin(daylightSavingFrom2026: true), version: "2026lht-dst")
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let logger = try ServiceProcess("session-logger", arguments: database)
        let common = database + ["--session-logger-api", logger.api, "--session-logger-events", logger.events,
                                 "--clock", "manual:2026-03-20T04:00:00Z", "--tzdata-check-seconds", "1"]
        let planners = try ["noticing", "paused"].map {
            try ServiceProcess("reminder-planner", arguments: common + ["--instance", $0], environment: ["TZDIR": zones.tzdir.path])
        }
        let context = try Context()
        let (noticing, paused) = (try WireClient(planners[0].api, context: context), try WireClient(planners[1].api, context: context))
        try settledShares([noticing, paused], timeout: 15)
        var reminders: [String] = []
        for user in usersOnePerPartition("zone") {
            _ = try noticing.ok("user.put", ["userId": user, "timeZone": "Europe/Berlin", "locale": "de"])
            reminders.append(try #require(try noticing.ok("reminder.put", ["userId": user, "activity": "workout", "time": "07:00"])["id"]?.stringValue))
        }

        // The puts published a reminder.changed each: only those after them count.
        let putsThrough = try noticing.allEvents().last?["seq"]?.intValue ?? 0
        // Summer time goes from 2026 while one instance is paused: the other plans its own users again.
        planners[1].process.signal(SIGSTOP)
        try zones.install(TZDataSystemTests.berlin(daylightSavingFrom2026: false), version: "2026lht-nodst")
        func changedReminders() throws -> Set<String> {
            Set(try noticing.allEvents().filter { $0["type"]?.stringValue == "reminder.changed" && ($0["seq"]?.intValue ?? 0) > putsThrough }
                .compactMap { $0["data"]?["id"]?.stringValue })
        }
        var changed: Set<String> = []
        try waitUntil(timeout: 20, interval: 0.2, "the running planner planning its own users again") {
            changed = try changedReminders()
            return !changed.isEmpty
        }
        Thread.sleep(forTimeInterval: 1)  // time for the paused instance's users to be planned again, which must not happen
        changed = try changedReminders()
        #expect(changed.count < reminders.count, "the paused instance's users were planned again before it was killed")
        planners[1].kill()
        try waitUntil(timeout: 15, interval: 0.2, "the running planner owning every partition") { try noticing.ownedPartitions() == 64 }

        try waitUntil(timeout: 20, interval: 0.5, "a reminder.changed for each of \(reminders.count) reminders (last: \(changed.count))") {
            changed = try changedReminders()
            return changed.isSuperset(of: reminders)
        }
    }
}
