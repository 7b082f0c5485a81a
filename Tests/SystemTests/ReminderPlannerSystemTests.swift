import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// SEMANTICS §2–§3 examples and seed `000_…`'s §7 testing checklist, driven through the real session
/// logger and planner executables on a manual clock. Monday 2026-11-16 in Europe/Berlin (UTC+1).
@Suite struct ReminderPlannerSystemTests {
    static let mondayMorning = "2026-11-16T08:00:00+01:00"

    @Test func example3BasicCancelAndResetNextDay() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("henning")
        let reminder = try rig.reminder("henning", "mindfulness", "18:00", lookback: 12)
        let session = try rig.session("henning", "mindfulness", "2026-11-16T10:00:00+01:00", "2026-11-16T10:15:00+01:00")

        let cancelled = try rig.events.of("reminder.cancelled", reminder: reminder)
        #expect(cancelled.count == 1)
        #expect(cancelled.first?["data"]?["at"]?.stringValue == "2026-11-16T17:00:00Z")
        #expect(cancelled.first?["data"]?["cause"]?.stringValue == session)
        #expect(try rig.status("henning", reminder, at: "2026-11-16T18:00:00+01:00") == "cancelled")
        #expect(try rig.status("henning", reminder, at: "2026-11-17T18:00:00+01:00") == "scheduled")

        #expect(try rig.advance(to: "2026-11-16T18:00:00+01:00") == 1)
        let suppressed = try rig.events.of("reminder.suppressed", reminder: reminder)
        #expect(suppressed.first?["data"]?["cause"]?.stringValue == session)
        #expect(suppressed.first?["topic"]?.stringValue == "reminder.suppressed.henning.mindfulness")
        // Automatic reset: Tuesday fires, with nothing to clean up.
        #expect(try rig.advance(to: "2026-11-17T18:00:01+01:00") == 1)
        let due = try rig.events.of("reminder.due", reminder: reminder)
        #expect(due.first?["data"]?["at"]?.stringValue == "2026-11-17T17:00:00Z")
        #expect(due.first?["data"]?["late"]?.boolValue == false)
        #expect(due.first?["data"]?["locale"]?.stringValue == "de")
        #expect(try rig.status("henning", reminder, at: "2026-11-17T18:00:00+01:00") == "fired")
    }

    @Test func example4MultipleRemindersAndOutsideTheWindow() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("ute")
        let noon = try rig.reminder("ute", "workout", "12:00", lookback: 1)
        let evening = try rig.reminder("ute", "workout", "18:00", lookback: 12)
        _ = try rig.session("ute", "workout", "2026-11-16T10:00:00+01:00", "2026-11-16T10:30:00+01:00")
        _ = try rig.events.of("reminder.cancelled", reminder: evening)
        #expect(try rig.status("ute", noon, at: "2026-11-16T12:00:00+01:00") == "scheduled")
        #expect(try rig.status("ute", evening, at: "2026-11-16T18:00:00+01:00") == "cancelled")
        #expect(try rig.advance(to: "2026-11-16T18:00:00+01:00") == 2)
        #expect(try rig.events.of("reminder.due", reminder: noon).count == 1)
        #expect(try rig.events.of("reminder.suppressed", reminder: evening).count == 1)
    }

    @Test func example5TooLateDoesNotCancelButExactlyAtTriggerDoes() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("late")
        try rig.user("exact")
        let late = try rig.reminder("late", "mindfulness", "18:00", lookback: 12)
        let exact = try rig.reminder("exact", "mindfulness", "18:00", lookback: 12)
        _ = try rig.session("late", "mindfulness", "2026-11-16T18:30:00+01:00", "2026-11-16T18:45:00+01:00")
        _ = try rig.session("exact", "mindfulness", "2026-11-16T18:00:00+01:00", "2026-11-16T18:20:00+01:00")
        _ = try rig.events.of("reminder.cancelled", reminder: exact)
        #expect(try rig.status("late", late, at: "2026-11-16T18:00:00+01:00") == "scheduled")
        #expect(try rig.status("exact", exact, at: "2026-11-16T18:00:00+01:00") == "cancelled")
        try rig.advance(to: "2026-11-16T18:00:00+01:00")
        #expect(try rig.events.of("reminder.due", reminder: late).count == 1)
        #expect(try rig.events.of("reminder.suppressed", reminder: exact).count == 1)
        #expect(try rig.events.of("reminder.cancelled", reminder: late, timeout: 0.2).isEmpty)
    }

    @Test func example6WeekdaySpecificity() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("wd")
        let reminder = try rig.reminder("wd", "workout", "18:00", lookback: 12, weekdays: ["mon", "wed"])
        _ = try rig.session("wd", "workout", "2026-11-16T10:00:00+01:00", "2026-11-16T10:30:00+01:00")
        _ = try rig.events.of("reminder.cancelled", reminder: reminder)
        let occurrences = try rig.upcoming("wd").filter { $0["reminderId"]?.stringValue == reminder }
        #expect(occurrences.map { $0["weekday"]?.stringValue } == ["mon", "wed"])
        #expect(occurrences.map { $0["status"]?.stringValue } == ["cancelled", "scheduled"])
    }

    @Test func example7NoAlcAsksAboutYesterday() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        for user in ["evening", "morning", "today"] { try rig.user(user) }
        let evening = try rig.reminder("evening", "noalc", "09:00")
        let morning = try rig.reminder("morning", "noalc", "09:00")
        let today = try rig.reminder("today", "noalc", "09:00")
        // Monday 22:00: "evening" logs Monday's level, about which Tuesday 09:00 asks.
        try rig.advance(to: "2026-11-16T22:00:00+01:00")
        _ = try rig.noalc("evening", day: "2026-11-16")
        _ = try rig.events.of("reminder.cancelled", reminder: evening)
        // Tuesday 08:30: "morning" logs yesterday too; "today" logs Tuesday itself.
        try rig.advance(to: "2026-11-17T08:30:00+01:00")
        _ = try rig.noalc("morning", day: "2026-11-16")
        _ = try rig.noalc("today", day: "2026-11-17")
        let cancelled = try rig.events.of("reminder.cancelled", reminder: morning)
        #expect(cancelled.first?["data"]?["targetDay"]?.stringValue == "2026-11-16")
        #expect(cancelled.first?["data"]?["windowStart"] == nil)
        #expect(try rig.status("evening", evening, at: "2026-11-17T09:00:00+01:00") == "cancelled")
        #expect(try rig.status("morning", morning, at: "2026-11-17T09:00:00+01:00") == "cancelled")
        #expect(try rig.status("today", today, at: "2026-11-17T09:00:00+01:00") == "scheduled")
        // Tuesday's level answers Wednesday's question instead.
        #expect(try rig.status("today", today, at: "2026-11-18T09:00:00+01:00") == "cancelled")
        try rig.advance(to: "2026-11-17T09:00:00+01:00")
        let tuesday = try rig.events.of("reminder.due", reminder: today, count: 2).first { $0["data"]?["day"]?.stringValue == "2026-11-17" }
        #expect(tuesday?["data"]?["targetDay"]?.stringValue == "2026-11-16")
        #expect(try rig.events.of("reminder.suppressed", reminder: morning).count == 1)
    }

    @Test func noalcEveningReminderAsksAboutToday() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("eve")
        let six = try rig.reminder("eve", "noalc", "18:00")
        let eight = try rig.reminder("eve", "noalc", "20:00")
        _ = try rig.noalc("eve", day: "2026-11-16")
        _ = try rig.events.of("reminder.cancelled", count: 2)
        #expect(try rig.status("eve", six, at: "2026-11-16T18:00:00+01:00") == "cancelled")
        #expect(try rig.status("eve", eight, at: "2026-11-16T20:00:00+01:00") == "cancelled")
        #expect(try rig.status("eve", six, at: "2026-11-17T18:00:00+01:00") == "scheduled")
    }

    @Test func example8ReminderCreatedAfterTheActivityIsCoveredAllTheSame() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("after")
        let session = try rig.session("after", "mindfulness", "2026-11-16T07:00:00+01:00", "2026-11-16T07:20:00+01:00")
        // The planner has the session before the reminder exists.
        for _ in 0..<250 where try rig.plannerClient.ok("health")["counters"]?["sessionsApplied"]?.intValue != 1 {
            Thread.sleep(forTimeInterval: 0.02)
        }
        try rig.advance(to: "2026-11-16T11:00:00+01:00")
        let reminder = try rig.reminder("after", "mindfulness", "18:00", lookback: 12)
        let cancelled = try rig.events.of("reminder.cancelled", reminder: reminder)
        #expect(cancelled.first?["data"]?["cause"]?.stringValue == session)
        try rig.advance(to: "2026-11-16T18:00:00+01:00")
        #expect(try rig.events.of("reminder.suppressed", reminder: reminder).first?["data"]?["cause"]?.stringValue == session)
    }

    /// A reminder put after what covers several of its occurrences announces each of them with its
    /// own cause: entries for two days, a month of NoAlc occurrences looked at together (the store
    /// reads their candidates in one query; `Coverage.cause` decides each).
    @Test func aReminderPutAfterSeveralCoveringEntriesAnnouncesEachWithItsOwnCause() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("weeks")
        let monday = try rig.noalc("weeks", day: "2026-11-16")
        let wednesday = try rig.noalc("weeks", day: "2026-11-18")
        for _ in 0..<250 where try rig.plannerClient.ok("health")["counters"]?["noalcEntriesApplied"]?.intValue != 2 {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let reminder = try rig.reminder("weeks", "noalc", "09:00")
        // 09:00 asks about the day before: Tuesday's about Monday, Thursday's about Wednesday.
        let cancelled = try rig.events.of("reminder.cancelled", reminder: reminder, count: 3, timeout: 1)
        #expect(cancelled.map { $0["data"]?["day"]?.stringValue } == ["2026-11-17", "2026-11-19"])
        #expect(cancelled.map { $0["data"]?["cause"]?.stringValue } == [monday, wednesday])
    }

    @Test func severalActivitiesInADayAnnounceOnceAndNameTheFirst() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("busy")
        let reminder = try rig.reminder("busy", "mindfulness", "18:00", lookback: 12)
        let first = try rig.session("busy", "mindfulness", "2026-11-16T09:00:00+01:00", "2026-11-16T09:10:00+01:00")
        _ = try rig.session("busy", "mindfulness", "2026-11-16T12:00:00+01:00", "2026-11-16T12:10:00+01:00")
        _ = try rig.session("busy", "mindfulness", "2026-11-16T15:00:00+01:00", "2026-11-16T15:10:00+01:00")
        try rig.advance(to: "2026-11-16T18:00:00+01:00")
        #expect(try rig.events.of("reminder.cancelled", reminder: reminder, count: 2, timeout: 1).count == 1)
        #expect(try rig.events.of("reminder.suppressed", reminder: reminder).first?["data"]?["cause"]?.stringValue == first)
    }

    @Test func editDisableAndDeleteWhileCancelledAreReevaluated() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("edit")
        let edited = try rig.reminder("edit", "workout", "18:00", lookback: 12)
        let toggled = try rig.reminder("edit", "workout", "19:00", lookback: 12)
        let deleted = try rig.reminder("edit", "workout", "20:00", lookback: 12)
        _ = try rig.session("edit", "workout", "2026-11-16T10:00:00+01:00", "2026-11-16T10:30:00+01:00")
        _ = try rig.events.of("reminder.cancelled", count: 3)

        // A 1-hour look-back no longer reaches the 10:00 workout.
        _ = try rig.reminder("edit", "workout", "18:00", lookback: 1, id: edited)
        #expect(try rig.status("edit", edited, at: "2026-11-16T18:00:00+01:00") == "scheduled")
        // Disabled: no occurrences at all; enabled again: covered again, announced again.
        _ = try rig.reminder("edit", "workout", "19:00", lookback: 12, id: toggled, enabled: false)
        #expect(try rig.upcoming("edit").allSatisfy { $0["reminderId"]?.stringValue != toggled })
        _ = try rig.reminder("edit", "workout", "19:00", lookback: 12, id: toggled, enabled: true)
        #expect(try rig.events.of("reminder.cancelled", reminder: toggled, count: 2).count == 2)
        // Deleted: announced as changed, never decided.
        let deletion = try rig.plannerClient.ok("reminder.delete", ["id": deleted])
        #expect(deletion["deleted"]?.boolValue == true)
        #expect(try rig.plannerClient.failure("reminder.get", ["id": deleted]) == ("not_found", "data.id"))
        #expect(try rig.events.of("reminder.changed", reminder: nil, count: 6).contains { $0["data"]?["deleted"]?.boolValue == true })

        try rig.advance(to: "2026-11-16T21:00:00+01:00")
        #expect(try rig.events.of("reminder.due", reminder: edited).count == 1)
        #expect(try rig.events.of("reminder.suppressed", reminder: toggled).count == 1)
        let decided = try rig.events.wait(timeout: 0.3) { _ in false }.filter { $0.envelope["data"]?["reminderId"]?.stringValue == deleted }
        #expect(decided.allSatisfy { $0.envelope["type"]?.stringValue == "reminder.cancelled" || $0.envelope["type"]?.stringValue == "reminder.changed" })
    }

    @Test func pauseSkipsRestoreFiresAndTestFiresAlways() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("p")
        let reminder = try rig.reminder("p", "mindfulness", "18:00", lookback: 12)
        _ = try rig.session("p", "mindfulness", "2026-11-16T10:00:00+01:00", "2026-11-16T10:15:00+01:00")
        _ = try rig.events.of("reminder.cancelled", reminder: reminder)

        let restored = try rig.plannerClient.ok("reminder.restore", ["reminderId": reminder, "at": "2026-11-16T17:00:00Z"])
        #expect(restored["status"]?.stringValue == "scheduled")
        #expect(try rig.events.of("reminder.restored", reminder: reminder).count == 1)
        #expect(try rig.plannerClient.failure("reminder.restore", ["reminderId": reminder, "at": "2026-11-16T17:01:00Z"]) == ("not_found", "data.at"))
        try rig.advance(to: "2026-11-16T18:00:00+01:00")
        #expect(try rig.events.of("reminder.due", reminder: reminder).count == 1)
        #expect(try rig.plannerClient.failure("reminder.restore", ["reminderId": reminder, "at": "2026-11-16T17:00:00Z"]) == ("conflict", "data.at"))

        try rig.user("p", paused: true)
        let test = try rig.plannerClient.ok("reminder.test", ["reminderId": reminder])
        #expect(test["status"]?.stringValue == "fired")
        try rig.advance(to: "2026-11-17T18:00:00+01:00")
        #expect(try rig.events.of("reminder.skipped", reminder: reminder).first?["data"]?["at"]?.stringValue == "2026-11-17T17:00:00Z")
        let dues = try rig.events.of("reminder.due", reminder: reminder, count: 2)
        #expect(dues.compactMap { $0["data"]?["test"]?.boolValue } == [false, true])
    }

    @Test func oneAdvanceOverSeveralDaysDecidesEveryOccurrenceInTimeOrder() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
        try rig.user("many")
        let morning = try rig.reminder("many", "workout", "09:00")
        let evening = try rig.reminder("many", "mindfulness", "20:00")
        #expect(try rig.advance(to: "2026-11-19T12:00:00+01:00") == 7)
        let decisions = try rig.plannerClient.ok("events.since", ["limit": 100])["events"]!.arrayValue
            .filter { $0["type"]?.stringValue == "reminder.due" }
        #expect(decisions.map { $0["data"]!["reminderId"]!.stringValue! } == [morning, evening, morning, evening, morning, evening, morning])
        let instants = decisions.map { $0["data"]!["at"]!.stringValue! }
        #expect(instants == instants.sorted())
    }

    @Test func anOccurrenceAtTheVeryInstantItsReminderIsCreatedExists() throws {
        let rig = try PlannerRig(clock: "2026-11-16T18:00:00+01:00")
        try rig.user("now")
        let reminder = try rig.reminder("now", "workout", "18:00")
        #expect(try rig.status("now", reminder, at: "2026-11-16T18:00:00+01:00") == "scheduled")
        #expect(try rig.advance(to: "2026-11-16T18:00:01+01:00") == 1)
        #expect(try rig.events.of("reminder.due", reminder: reminder).first?["data"]?["at"]?.stringValue == "2026-11-16T17:00:00Z")
    }

    @Test func daylightSavingNightsInTheRealService() throws {
        let rig = try PlannerRig(clock: "2026-03-28T12:00:00+01:00")
        try rig.user("dst")
        let reminder = try rig.reminder("dst", "workout", "02:30")
        let spring = try rig.upcoming("dst", days: 2).filter { $0["day"]?.stringValue == "2026-03-29" }
        #expect(spring.first?["at"]?.stringValue == "2026-03-29T01:30:00Z")
        #expect(spring.first?["localTime"]?.stringValue == "03:30")
        try rig.advance(to: "2026-03-29T03:30:00+02:00")
        #expect(try rig.events.of("reminder.due", reminder: reminder).first?["data"]?["day"]?.stringValue == "2026-03-29")
        // Autumn: the first 02:30, once.
        try rig.advance(to: "2026-10-24T12:00:00+02:00")
        let autumn = try rig.upcoming("dst", days: 2).filter { $0["day"]?.stringValue == "2026-10-25" }
        #expect(autumn.map { $0["at"]?.stringValue } == ["2026-10-25T00:30:00Z"])
    }

    @Test func badRequestsGetClearErrorsAndChangeNothing() throws {
        let rig = try PlannerRig(clock: Self.mondayMorning)
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
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events, "--clock", "manual:\(Self.mondayMorning)"]
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

/// Restarts: decisions survive, are never taken twice, and late ones follow the grace window.
@Suite struct ReminderPlannerRestartTests {
    /// Every decision event in the planner's outbox, by occurrence identity.
    func decisions(_ rig: PlannerRig) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        for event in try rig.plannerClient.ok("events.since", ["limit": 1000])["events"]!.arrayValue {
            let type = event["type"]!.stringValue!
            guard ["reminder.due", "reminder.suppressed", "reminder.missed", "reminder.skipped"].contains(type),
                  event["data"]?["test"]?.boolValue != true else { continue }
            result["\(event["data"]!["reminderId"]!.stringValue!)@\(event["data"]!["at"]!.stringValue!)", default: []].append(type)
        }
        return result
    }

    @Test func restartKeepsCancellations() throws {
        let rig = try PlannerRig(clock: ReminderPlannerSystemTests.mondayMorning)
        try rig.user("r")
        let reminder = try rig.reminder("r", "mindfulness", "18:00", lookback: 12)
        _ = try rig.session("r", "mindfulness", "2026-11-16T10:00:00+01:00", "2026-11-16T10:15:00+01:00")
        _ = try rig.events.of("reminder.cancelled", reminder: reminder)
        rig.planner.kill()
        try rig.planner.restart()
        try rig.reconnect()
        #expect(try rig.status("r", reminder, at: "2026-11-16T18:00:00+01:00") == "cancelled")
        try rig.advance(to: "2026-11-16T18:00:00+01:00")
        #expect(try decisions(rig).values.flatMap { $0 } == ["reminder.suppressed"])
    }

    @Test func sigkillBetweenDecisionsNeverDecidesTwiceAndHonoursGrace() throws {
        let rig = try PlannerRig(clock: ReminderPlannerSystemTests.mondayMorning)
        try rig.user("g")
        let nine = try rig.reminder("g", "workout", "09:00")
        let half = try rig.reminder("g", "workout", "10:30")
        let eleven = try rig.reminder("g", "mindfulness", "11:00")
        try rig.advance(to: "2026-11-16T09:00:00+01:00")
        rig.planner.kill()

        // Back 15 minutes after 10:30: late but within the grace window.
        try rig.planner.restart(changing: ["--clock": "manual:2026-11-16T10:45:00+01:00"])
        try rig.reconnect()
        var decided = try decisions(rig)
        #expect(decided["\(nine)@2026-11-16T08:00:00Z"] == ["reminder.due"])
        #expect(decided["\(half)@2026-11-16T09:30:00Z"] == ["reminder.due"])
        let late = try rig.plannerClient.ok("events.since", ["limit": 1000])["events"]!.arrayValue
            .first { $0["data"]?["reminderId"]?.stringValue == half }
        #expect(late?["data"]?["late"]?.boolValue == true)
        rig.planner.kill()

        // Back 90 minutes after 11:00: beyond the 60-minute grace, published once as missed.
        try rig.planner.restart(changing: ["--clock": "manual:2026-11-16T12:30:00+01:00"])
        try rig.reconnect()
        decided = try decisions(rig)
        #expect(decided["\(eleven)@2026-11-16T10:00:00Z"] == ["reminder.missed"])
        #expect(decided.values.allSatisfy { $0.count == 1 })
        // A restart with an older clock flag keeps the later clock it had reached.
        rig.planner.kill()
        try rig.planner.restart(changing: ["--clock": "manual:2026-11-16T08:00:00+01:00"])
        try rig.reconnect()
        #expect(try rig.plannerClient.ok("clock.get")["now"]?.stringValue == "2026-11-16T11:30:00Z")
        #expect(try decisions(rig).values.allSatisfy { $0.count == 1 })
    }

    /// Every decision event in the outbox, all pages of it, by occurrence identity (`reminderId@at`).
    func allDecisions(_ rig: PlannerRig) throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        var after: Int64 = 0
        while true {
            let page = try rig.plannerClient.ok("events.since", ["after": after, "limit": 1000])["events"]!.arrayValue
            guard let last = page.last?["seq"]?.intValue else { return result }
            after = Int64(last)
            for event in page {
                let type = event["type"]!.stringValue!
                guard ["reminder.due", "reminder.suppressed", "reminder.missed", "reminder.skipped"].contains(type) else { continue }
                result["\(event["data"]!["reminderId"]!.stringValue!)@\(event["data"]!["at"]!.stringValue!)", default: []].append(type)
            }
        }
    }

    /// Red-team finding 9: a 180-day `clock.advance` moves in committed steps. SIGKILL while it runs
    /// leaves the clock at the last committed step with every decision up to it taken once; advancing
    /// again to the target decides the rest once.
    @Test func sigkillDuringALongAdvanceKeepsTheCommittedStepsAndTheRestIsDecidedOnce() throws {
        let start = Instant(rfc3339: "2026-11-16T00:00:00Z")!
        let target = start.adding(seconds: 180 * 86_400)
        let rig = try PlannerRig(clock: start.description)
        try rig.user("long", zone: "UTC", locale: "en")
        // Daily reminders, never at midnight: 180 occurrences each in (start, target].
        var minutes: [String: Int] = [:]
        for index in 0..<200 {
            let minute = 1 + index * 7 % 1439
            let id = try rig.reminder("long", "workout", String(format: "%02d:%02d", minute / 60, minute % 60))
            minutes[id] = minute
        }
        var occurrences: [String: Instant] = [:]
        for (id, minute) in minutes {
            for day in 0..<180 {
                let at = start.adding(seconds: Int64(day) * 86_400 + Int64(minute) * 60)
                occurrences["\(id)@\(at)"] = at
            }
        }

        let mover = try WireClient(rig.planner.api, context: rig.context)
        try mover.socket.send(multipart: [Data(), JSONSerialization.data(withJSONObject: ["v": 1, "op": "clock.advance", "data": ["seconds": 180 * 86_400]])])
        // Answered between steps: as soon as the clock shows a committed step, kill.
        var seen = start
        for _ in 0..<2000 where seen == start {
            seen = Instant(rfc3339: try rig.plannerClient.ok("clock.get")["now"]!.stringValue!)!
            if seen == start { Thread.sleep(forTimeInterval: 0.005) }
        }
        rig.planner.kill()
        #expect(seen > start && seen < target, "the advance was still under way when clock.get answered")

        try rig.planner.restart()
        try rig.reconnect()
        let reached = Instant(rfc3339: try rig.plannerClient.ok("clock.get")["now"]!.stringValue!)!
        #expect(reached >= seen && reached < target)
        let before = try allDecisions(rig)
        #expect(before.values.allSatisfy { $0 == ["reminder.due"] })
        #expect(Set(before.keys).isSubset(of: Set(occurrences.keys)))
        // Everything up to the committed clock is decided; beyond it at most the one instant a step split.
        let expectedBefore = Set(occurrences.filter { $0.value <= reached }.keys)
        #expect(expectedBefore.isSubset(of: Set(before.keys)))
        #expect(Set(before.keys.compactMap { key in occurrences[key].flatMap { $0 > reached ? $0 : nil } }).count <= 1)

        let frame = try JSONSerialization.data(withJSONObject: ["v": 1, "op": "clock.set", "data": ["now": target.description]])
        let reply = try JSONDecoder().decode(JSONValue.self, from: rig.plannerClient.raw(frame, timeoutMilliseconds: 600_000))
        #expect(reply["ok"]?.boolValue == true)
        #expect(reply["data"]?["decided"]?.intValue.map(Int.init) == occurrences.count - before.count)
        let after = try allDecisions(rig)
        #expect(Set(after.keys) == Set(occurrences.keys))
        #expect(after.values.allSatisfy { $0 == ["reminder.due"] })
        print("SIGKILL during a 180-day advance over \(minutes.count) reminders: clock at \(reached), \(before.count) of \(occurrences.count) decided before the kill, the rest once after")
    }
}
