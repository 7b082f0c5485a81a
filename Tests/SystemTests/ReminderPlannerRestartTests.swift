import Foundation
import LHTSchema
import Testing
import ZeroMQ

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
        try waitUntil(timeout: 60, interval: 0.005, "a committed step of the advance") {
            seen = Instant(rfc3339: try rig.plannerClient.ok("clock.get")["now"]!.stringValue!)!
            return seen != start
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
