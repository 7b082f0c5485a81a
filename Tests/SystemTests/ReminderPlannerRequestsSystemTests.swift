import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// The real planner's answers to bad requests and clock ops, and two planners sharing one database.
@Suite struct ReminderPlannerRequestsSystemTests {
    @Test func badRequestsGetClearErrorsAndChangeNothing() throws {
        let rig = try PlannerRig(clock: ReminderPlannerSystemTests.mondayMorning)
        let client = rig.plannerClient
        let base: [String: Any] = ["userId": "bad", "activity": "workout"]
        #expect(try client.failure("reminder.put", base.merging(["lookbackHours": 0]) { $1 }) == ("invalid_argument", "data.lookbackHours"))
        #expect(try client.failure("reminder.put", base.merging(["lookbackHours": 49]) { $1 }) == ("invalid_argument", "data.lookbackHours"))
        #expect(try client.failure("reminder.put", base.merging(["weekdays": ["mon", "funday"]]) { $1 }) == ("invalid_argument", "data.weekdays[1]"))
        #expect(try client.failure("reminder.put", base.merging(["time": "24:00"]) { $1 }) == ("invalid_argument", "data.time"))
        #expect(try client.failure("reminder.put", ["userId": "bad", "activity": "sleep"]) == ("invalid_argument", "data.activity"))
        #expect(try client.failure("user.put", ["userId": "bad", "timeZone": "Berlin", "locale": "de"]) == ("invalid_argument", "data.timeZone"))
        #expect(try client.failure("user.put", ["userId": "bad", "timeZone": "UTC", "locale": "fr"]) == ("invalid_argument", "data.locale"))
        #expect(try client.failure("reminder.upcoming", ["userId": "bad", "days": 32]) == ("invalid_argument", "data.days"))
        #expect(try client.failure("reminder.get", ["id": "3f2b8c1e-0000-4000-8000-000000000000"]) == ("not_found", "data.id"))
        #expect(try client.failure("clock.set", ["now": "2026-11-16T07:00:00+01:00"]) == ("invalid_argument", "data.now"))
        #expect(try client.failure("clock.advance", ["seconds": -1]) == ("invalid_argument", "data.seconds"))
        #expect(try client.ok("reminder.list", ["userId": "bad"])["reminders"]?.arrayValue.isEmpty == true)
        #expect(try client.ok("health")["lastSeq"]?.intValue == 0)

        // An empty weekday list is stored, disabled, with a warning.
        let empty = try client.ok("reminder.put", base.merging(["weekdays": [String]()]) { $1 })
        #expect(empty["enabled"]?.boolValue == false)
        #expect(empty["warnings"]?.arrayValue.count == 1)
        // A user never put gets the defaults.
        let user = try client.ok("user.get", ["userId": "nobody"])
        #expect(user["timeZone"]?.stringValue == "UTC" && user["locale"]?.stringValue == "en" && user["paused"]?.boolValue == false)
    }

    /// Two planners on one PostgreSQL database both start (ready, bound) and answer for every user:
    /// a reminder put through one is listed through the other. They share the 64 partitions, and
    /// once one is SIGKILLed the other holds them all within 15 s.
    @Test(SystemTestBackend.onceOnly) func twoPlannersOnOneDatabaseServeTogetherAndShareThePartitions() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let logger = try ServiceProcess("session-logger", arguments: database)
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events, "--clock", "manual:\(ReminderPlannerSystemTests.mondayMorning)"]
        let first = try ServiceProcess("reminder-planner", arguments: database + upstream + ["--instance", "first"])
        let second = try ServiceProcess("reminder-planner", arguments: database + upstream + ["--instance", "second"])
        let context = try Context()
        let (a, b) = (try WireClient(first.api, context: context), try WireClient(second.api, context: context))

        // A write acknowledged by either instance is read by the other.
        let onFirst = try #require(try a.ok("reminder.put", ["userId": "henning", "activity": "workout", "time": "09:00"])["id"]?.stringValue)
        #expect(try b.ok("reminder.get", ["id": onFirst])["id"]?.stringValue == onFirst)
        let onSecond = try #require(try b.ok("reminder.put", ["userId": "henning", "activity": "mindfulness", "time": "18:00"])["id"]?.stringValue)
        for client in [a, b] {
            let listed = try client.ok("reminder.list", ["userId": "henning"])["reminders"]?.arrayValue.compactMap { $0["id"]?.stringValue } ?? []
            #expect(Set(listed) == [onFirst, onSecond] && listed.count == 2, "\(listed)")
        }

        // Each holds a share of the partitions, together all 64 (rebalanced every second).
        try settledShares([a, b], timeout: 10)

        // The survivor takes the dead one's share within 15 s and serves on with what it stored.
        let killed = Date()
        first.kill()
        try waitUntil(timeout: 15, interval: 0.2, "the surviving planner owning all 64 partitions") { try b.ownedPartitions() == 64 }
        #expect(Date().timeIntervalSince(killed) <= 15)
        #expect(try b.ok("reminder.get", ["id": onFirst])["id"]?.stringValue == onFirst)
    }

    @Test func clockOpsNeedAManualClock() throws {
        let logger = try ServiceProcess("session-logger")
        let planner = try ServiceProcess("reminder-planner", arguments: ["--session-logger-api", logger.api, "--session-logger-events", logger.events])
        let client = try WireClient(planner.api, context: .init())
        #expect(try client.failure("clock.advance", ["seconds": 60]) == ("invalid_argument", "op"))
        #expect(try client.ok("clock.get")["now"]?.stringValue != nil)
    }
}
