import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// Restarts: whatever happens to the notifier, each due occurrence is handled exactly once.
@Suite struct NotifierRestartTests {
    @Test func sigkillWhileThePlannerPublishesNotifiesEveryDueOccurrenceExactlyOnce() throws {
        let rig = try NotifierRig()
        try rig.planner.user("kim", locale: "en")
        _ = try rig.planner.reminder("kim", "noalc", "09:00")
        _ = try rig.planner.reminder("kim", "workout", "18:00")
        // 30 minutes after 18:00: always rate-limited, so dropped occurrences must stay dropped across restarts too.
        let dropped = try rig.planner.reminder("kim", "workout", "18:30")
        _ = try rig.planner.reminder("kim", "mindfulness", "20:00")
        try rig.planner.advance(to: "2026-11-16T20:00:00+01:00")
        try rig.settle(handled: 4)

        // Killed while the planner is deciding; then several days pass while it is down.
        try rig.planner.advance(to: "2026-11-17T20:00:00+01:00")
        rig.notifier.kill()
        for day in 18...21 {
            try rig.planner.advance(to: "2026-11-\(day)T12:00:00+01:00")
            try rig.planner.advance(to: "2026-11-\(day)T20:00:00+01:00")
        }
        let due = try dueIdentities(rig)
        #expect(due.count == 6 * 4)

        try rig.notifier.restart()
        try rig.reconnect()
        try rig.settle(handled: due.count)
        // Twice more, once right after start-up: nothing is notified again.
        for _ in 0..<2 {
            rig.notifier.kill()
            try rig.notifier.restart()
            try rig.reconnect()
        }
        try rig.planner.advance(to: "2026-11-22T20:00:00+01:00")
        let allDue = try dueIdentities(rig)
        try rig.settle(handled: allDue.count)

        let sent = try rig.notifications("kim", count: allDue.count)
        let sentIds = sent.compactMap { $0["notificationId"]?.stringValue }
        #expect(sentIds.count == Set(sentIds).count)
        #expect(Set(sentIds) == Set(allDue.filter { !$0.hasPrefix(dropped) }))
        #expect(try rig.counter("rateLimited") == Int64(allDue.filter { $0.hasPrefix(dropped) }.count))
        // The notifier's own log is gap-free and agrees with the list.
        let events = try rig.client.ok("events.since", ["limit": 1000])["events"]!.arrayValue
        #expect(events.compactMap { $0["seq"]?.intValue } == Array(1...Int64(sent.count)))
        #expect(events.map { $0["data"]! } == sent)
    }

    /// The identities of every non-test `reminder.due` the planner stored.
    private func dueIdentities(_ rig: NotifierRig) throws -> [String] {
        try rig.planner.plannerClient.ok("events.since", ["limit": 1000])["events"]!.arrayValue
            .filter { $0["type"]?.stringValue == "reminder.due" && $0["data"]?["test"]?.boolValue == false }
            .map { "\($0["data"]!["reminderId"]!.stringValue!)@\($0["data"]!["at"]!.stringValue!)" }
    }
}
