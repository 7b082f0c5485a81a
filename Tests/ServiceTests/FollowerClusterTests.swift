import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// Two instances of a follower (streak service, notifier) over one PostgreSQL, both following the
/// same upstream: each upstream event changes the shared state once and is published once, and
/// either instance answers for any user. Serialized: each test starts a server of its own.
@Suite(.serialized) struct FollowerClusterTests {
    let henning = user("henning")

    /// Waits until every instance applied the upstream through `seq`.
    func waitUntilApplied(_ seq: Int64, by instances: [InProcessService], rig: ServiceRig) throws {
        try waitUntil(timeout: 10, "every instance applied the upstream through \(seq)") {
            try instances.allSatisfy { try rig.client($0).call(Ops.health, NoFields()).upstreams.first?.appliedSeq == seq }
        }
    }

    @Test func twoStreakInstancesPublishEachChangeOnceAndAnswerAlike() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let logger = try rig.sessionLogger()
        let instances = [try rig.streak(following: logger), try rig.streak(following: logger)]
        for (offset, level) in [NoAlcLevel.steady, .steady, .wild, .steady].enumerated() {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01").adding(days: offset), level: level))
        }
        try waitUntilApplied(4, by: instances, rig: rig)

        let logs = try instances.map { try rig.client($0).call(Ops.eventsSince, EventsSinceRequest(after: 0)) }
        let states = logs[0].events.compactMap { if case .streakUpdated(let state) = $0.data { state } else { nil } }
        #expect(states.map(\.lastLoggedDay) == (0..<4).map { day("2026-03-01").adding(days: $0) }, "one streak.updated per change")
        #expect(logs[0].events.map(\.seq) == Array(1...4))
        #expect(logs[1].events.map(\.id) == logs[0].events.map(\.id))
        let answers = try instances.map { try rig.client($0).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-04"))) }
        #expect(answers[0] == answers[1])
        #expect(answers[0] == states.last)
    }

    @Test func twoNotifiersNotifyEachDueOnce() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: Instant.now().minuteFloor, following: logger)
        let instances = [try rig.notifier(following: planner, logger: logger), try rig.notifier(following: planner, logger: logger)]
        let plannerClient = rig.client(planner)
        _ = try plannerClient.call(Ops.userPut, UserPutRequest(userId: henning, timeZone: .utc, locale: .en))
        let reminder = try plannerClient.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .noalc)).reminder
        for _ in 0..<3 { _ = try plannerClient.call(Ops.reminderTest, ReminderTestRequest(reminderId: reminder.id)) }
        try waitUntilApplied(try plannerClient.call(Ops.health, NoFields()).lastSeq, by: instances, rig: rig)

        let lists = try instances.map { try rig.client($0).call(Ops.notificationList, NotificationListRequest(userId: henning)) }
        #expect(lists[0].notifications.count == 3, "one notification per reminder.due")
        #expect(lists[0].notifications == lists[1].notifications)
        #expect(lists[0].notifications.map(\.seq) == [1, 2, 3])

        // A quick action on either instance, for a notification either published: one entry.
        let notificationId = try #require(lists[0].notifications.first?.notificationId)
        let action = NotificationActionRequest(notificationId: notificationId, actionId: "noalc.steady")
        let entries = try instances.map { try rig.client($0).call(Ops.notificationAction, action).entry }
        #expect(entries[0] != nil && entries[0] == entries[1])
        #expect(try rig.client(logger).call(Ops.health, NoFields()).lastSeq == 1)
    }

    static let users = (0..<16).map { user("user\($0)") }

    /// Two streak instances share the users by partitions; one stops, and the entries logged
    /// meanwhile for its users are applied, and published, once, by the other, which owns every
    /// partition within 15 s.
    @Test func aStreakInstanceTakesOverTheUsersOfOneThatStopped() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let logger = try rig.sessionLogger()
        let instances = [try rig.streak(following: logger), try rig.streak(following: logger)]
        try rig.waitUntilSharing(instances, timeout: 10)
        let loggerClient = rig.client(logger)
        func logEveryone(_ day: LocalDay) throws {
            for user in Self.users { _ = try loggerClient.call(Ops.noalcLog, NoAlcLogRequest(userId: user, day: day, level: .steady)) }
        }
        try logEveryone(day("2026-03-01"))
        try waitUntilApplied(Int64(Self.users.count), by: instances, rig: rig)

        #expect(instances[0].stop())
        try logEveryone(day("2026-03-02"))
        let survivor = rig.client(instances[1])
        try rig.waitUntilSharing([instances[1]], timeout: 15)
        try waitUntilApplied(Int64(2 * Self.users.count), by: [instances[1]], rig: rig)
        try waitUntil(timeout: 10, interval: 0.2, "every change is published") {
            try survivor.call(Ops.eventsSince, EventsSinceRequest(after: 0)).events.count == 2 * Self.users.count
        }
        var published: [String: Int] = [:]
        for event in try survivor.call(Ops.eventsSince, EventsSinceRequest(after: 0)).events {
            guard case .streakUpdated(let state) = event.data else { continue }
            published["\(state.userId) \(state.lastLoggedDay.map(\.description) ?? "-")", default: 0] += 1
        }
        #expect(published.count == 2 * Self.users.count && published.values.allSatisfy { $0 == 1 }, "\(published)")
        for user in Self.users {
            #expect(try survivor.call(Ops.streakGet, StreakGetRequest(userId: user, asOf: day("2026-03-02"))).lastLoggedDay == day("2026-03-02"))
        }
    }

    /// Two notifiers share the users by partitions, each notifying its own; one stops, and the
    /// reminders due meanwhile for its users are notified, once, by the other.
    @Test func aNotifierTakesOverTheUsersOfOneThatStopped() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: Instant.now().minuteFloor, following: logger)
        let instances = [try rig.notifier(following: planner, logger: logger), try rig.notifier(following: planner, logger: logger)]
        try rig.waitUntilSharing(instances, timeout: 10)
        let plannerClient = rig.client(planner)
        let reminders = try Self.users.map { try plannerClient.call(Ops.reminderPut, ReminderPutRequest(userId: $0, activity: .workout)).reminder }
        func fireEveryone() throws {
            for reminder in reminders { _ = try plannerClient.call(Ops.reminderTest, ReminderTestRequest(reminderId: reminder.id)) }
        }
        try fireEveryone()
        try waitUntilApplied(try plannerClient.call(Ops.health, NoFields()).lastSeq, by: instances, rig: rig)

        #expect(instances[0].stop())
        try fireEveryone()
        let survivor = rig.client(instances[1])
        try rig.waitUntilSharing([instances[1]], timeout: 15)
        try waitUntilApplied(try plannerClient.call(Ops.health, NoFields()).lastSeq, by: [instances[1]], rig: rig)
        try waitUntil(timeout: 10, interval: 0.2, "every due is notified") {
            try Self.users.allSatisfy { try survivor.call(Ops.notificationList, NotificationListRequest(userId: $0)).notifications.count == 2 }
        }
        let notified = try survivor.call(Ops.eventsSince, EventsSinceRequest(after: 0)).events.filter { $0.type == Events.notify.name }
        #expect(notified.count == 2 * Self.users.count, "one notification per reminder.due")
    }
}
