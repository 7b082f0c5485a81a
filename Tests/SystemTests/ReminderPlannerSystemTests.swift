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
        try waitUntil(timeout: 30, interval: 0.02, "the planner applying the session") {
            try rig.plannerClient.ok("health")["counters"]?["sessionsApplied"]?.intValue == 1
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
        try waitUntil(timeout: 30, interval: 0.02, "the planner applying both entries") {
            try rig.plannerClient.ok("health")["counters"]?["noalcEntriesApplied"]?.intValue == 2
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
}
