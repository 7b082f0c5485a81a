import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// The notifier in-process behind a planner and a session logger, also in-process, on either
/// backend (all three on the rig's PostgreSQL for `.postgresql`).
@Suite struct NotifierServiceTests {
    /// One test's three services.
    struct Services {
        let rig: ServiceRig
        let logger: InProcessService
        let planner: InProcessService
        let notifier: InProcessService
        let henning = user("henning")

        init(_ backend: Backend) throws {
            rig = try ServiceRig(.inproc, backend: backend)
            logger = try rig.sessionLogger()
            planner = try rig.planner(clock: Instant.now().minuteFloor, following: logger)
            notifier = try rig.notifier(following: planner, logger: logger)
        }

        /// A NoAlc reminder fired with `reminder.test`; returns the notification the notifier published.
        func testNotification() throws -> (Occurrence, LHTSchema.Notification, ReceivedEvent) {
            let plannerClient = rig.client(planner)
            let notifications = try rig.recorder(notifier)
            _ = try plannerClient.call(Ops.userPut, UserPutRequest(userId: henning, timeZone: .utc, locale: .en))
            let reminder = try plannerClient.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .noalc)).reminder
            let fired = try plannerClient.call(Ops.reminderTest, ReminderTestRequest(reminderId: reminder.id))
            let event = try #require(try notifications.wait(for: Events.notify).first)
            guard case .notify(let notification) = event.data else { throw HarnessError("notify carries \(String(describing: event.data))") }
            return (fired, notification, event)
        }
    }

    @Test(arguments: Backend.allCases)
    func aTestReminderBecomesANotificationThatIsListed(_ backend: Backend) throws {
        let services = try Services(backend)
        let (rig, notifier, henning) = (services.rig, services.notifier, services.henning)
        let (fired, notification, event) = try services.testNotification()
        #expect(fired.status == .fired)
        #expect(notification.reminderId == fired.reminderId)
        #expect(notification.userId == henning && notification.activity == .noalc)
        #expect(notification.test)
        #expect(notification.seq == event.seq)
        #expect(event.topic == Events.notify.topic(userId: henning, activity: .noalc).description)
        #expect(notification.targetDay != nil)
        #expect(notification.actions.map(\.id).contains("noalc.steady"))

        let listed = try rig.client(notifier).call(Ops.notificationList, NotificationListRequest(userId: henning))
        #expect(listed.notifications == [notification])
        #expect(try rig.client(notifier).call(Ops.notificationList, NotificationListRequest(userId: henning, after: event.seq)).notifications.isEmpty)
        #expect(try rig.client(notifier).call(Ops.notificationList, NotificationListRequest(userId: user("someone"))).notifications.isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func aNoAlcQuickActionLogsAnEntryAtTheLoggerOnce(_ backend: Backend) throws {
        let services = try Services(backend)
        let (rig, logger, notifier, henning) = (services.rig, services.logger, services.notifier, services.henning)
        let (_, notification, _) = try services.testNotification()
        let targetDay = try #require(notification.targetDay)
        let loggerEvents = try rig.recorder(logger)
        let client = rig.client(notifier)
        let action = NotificationActionRequest(notificationId: notification.notificationId, actionId: "noalc.steady")

        let reply = try client.call(Ops.notificationAction, action)
        let entry = try #require(reply.entry)
        #expect(reply.deepLink == nil)
        #expect(entry.userId == henning && entry.day == targetDay && entry.level == .steady)
        #expect(entry.source == "notification")

        let listed = try rig.client(logger).call(Ops.noalcList, DayRangeRequest(userId: henning, from: targetDay, until: targetDay))
        #expect(listed.entries == [entry])
        let logged = try loggerEvents.wait(for: Events.noalcLogged)
        #expect(logged.map(\.data) == [.noalcLogged(entry)])

        // Tapping again (or a retry after a lost ack) gets the same entry back, and logs nothing new.
        #expect(try client.call(Ops.notificationAction, action).entry == entry)
        #expect(try rig.client(logger).call(Ops.health, NoFields()).lastSeq == logged.first?.seq)
        // An action the notification does not offer names the field.
        let unknown = try client.refusal(Ops.notificationAction, NotificationActionRequest(notificationId: notification.notificationId, actionId: "noalc.maybe"))
        #expect(unknown.code == .notFound && unknown.field == "data.actionId")
    }
}

/// The notifier's cursor lives in its projection file (`Projection.cursorsOnly`): lost with it, the
/// notifier reads the planner's log again from its start and notifies nothing twice.
@Suite struct NotifierCursorTests {
    @Test func aLostCursorReadsThePlannersLogAgainAndNotifiesNothingTwice() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: Instant.now().minuteFloor, following: logger)
        var notifier = try rig.notifier(following: planner, logger: logger)
        let henning = user("henning")
        let reminder = try rig.client(planner).call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout)).reminder
        _ = try rig.client(planner).call(Ops.reminderTest, ReminderTestRequest(reminderId: reminder.id))
        _ = try rig.recorder(notifier).wait(for: Events.notify)
        let before = try rig.client(notifier).call(Ops.eventsSince, EventsSinceRequest(after: 0)).events
        #expect(before.count == 1)
        #expect(notifier.stop())

        let directory = rig.scratch.subdirectory(ServiceName.notifier.rawValue)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("notifier.projection.sqlite"))
        notifier = try rig.notifier(following: planner, logger: logger)
        let plannerSeq = try rig.client(planner).call(Ops.health, NoFields()).lastSeq
        try waitUntil("the notifier read the planner's log again") {
            (try? rig.client(notifier).call(Ops.health, NoFields()).upstreams.first?.appliedSeq) == plannerSeq
        }
        #expect(try rig.client(notifier).call(Ops.eventsSince, EventsSinceRequest(after: 0)).events.map(\.id) == before.map(\.id))
        #expect(try rig.client(notifier).call(Ops.notificationList, NotificationListRequest(userId: henning)).notifications.count == 1)
    }
}
