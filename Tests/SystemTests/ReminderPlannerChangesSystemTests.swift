import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// Changes to reminders and the clock through the real planner: edits while cancelled, pause and restore,
/// long advances, an occurrence at the instant of creation, daylight-saving nights.
@Suite struct ReminderPlannerChangesSystemTests {
    @Test func editDisableAndDeleteWhileCancelledAreReevaluated() throws {
        let rig = try PlannerRig(clock: ReminderPlannerSystemTests.mondayMorning)
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
        let upcoming = try rig.upcoming("edit")
        #expect(upcoming.contains { $0["reminderId"]?.stringValue == edited }, "the enabled reminder listed: \(upcoming)")
        #expect(upcoming.allSatisfy { $0["reminderId"]?.stringValue != toggled })
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
        let rig = try PlannerRig(clock: ReminderPlannerSystemTests.mondayMorning)
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
        let rig = try PlannerRig(clock: ReminderPlannerSystemTests.mondayMorning)
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

}
