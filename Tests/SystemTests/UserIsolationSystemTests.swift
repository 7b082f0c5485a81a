import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// PROTOCOL "Security": with keys, each user reads, writes and follows only its own data, through
/// LHTClient's `ServiceClient`/`Subscription`/`EventFollower` with `CurveCredentials` against the real executables.
@Suite(.serialized) struct UserIsolationSystemTests {
    // MARK: One user and another's data

    @Test func aUserCannotReadWriteDeleteOrActOnAnotherUsersData() throws {
        let system = try LHTSystem(services: [.planner, .notifier, .streak], keys: true)
        let alice = try system.addUser("alice"), bob = try system.addUser("bob")
        let bobID = UserID("bob")!
        let bobs = try ClientsOf(system, bob.secret)
        let alices = try ClientsOf(system, alice.secret)

        // Bob's data: settings, a reminder, a session, a NoAlc day, and a notification (a test firing).
        _ = try bobs.planner.call(Ops.userPut, UserPutRequest(userId: bobID, timeZone: ZoneID("Europe/Berlin")!, locale: .en), timeoutMilliseconds: 5000)
        let reminder = try bobs.planner.call(Ops.reminderPut, ReminderPutRequest(userId: bobID, activity: .noalc, time: LocalTime("09:00")),
                                             timeoutMilliseconds: 5000).reminder
        let session = try bobs.logger.call(Ops.sessionLog, SessionLogRequest(userId: bobID, activity: .mindfulness,
                                                                            start: instant("2026-11-16T10:00:00+01:00"), end: instant("2026-11-16T10:15:00+01:00")),
                                           timeoutMilliseconds: 5000)
        _ = try bobs.logger.call(Ops.noalcLog, NoAlcLogRequest(userId: bobID, day: LocalDay("2026-11-15")!, level: .steady), timeoutMilliseconds: 5000)
        _ = try bobs.planner.call(Ops.reminderTest, ReminderTestRequest(reminderId: reminder.id), timeoutMilliseconds: 5000)
        var notifications: [LHTSchema.Notification] = []
        try waitUntil(timeout: 10, interval: 0.1, "bob's test notification") {
            notifications = try bobs.notifier.call(Ops.notificationList, NotificationListRequest(userId: bobID), timeoutMilliseconds: 5000).notifications
            return !notifications.isEmpty
        }
        let notification = try #require(notifications.first).notificationId
        // Everything settled (the streak service followed the NoAlc entry) before the counting starts.
        try waitUntil(timeout: 10, interval: 0.05, "every service following its upstreams' last events") { try system.settled() }
        let before = try system.lastSeqs()

        // Bob's userId: unauthorized, whatever the op.
        let ownUserRequests: [(String, WireError?)] = [
            ("user.get", alices.refusal(alices.planner, Ops.userGet, UserRequest(userId: bobID))),
            ("user.put", alices.refusal(alices.planner, Ops.userPut, UserPutRequest(userId: bobID, timeZone: ZoneID("UTC")!, locale: .de, paused: true))),
            ("reminder.list", alices.refusal(alices.planner, Ops.reminderList, UserRequest(userId: bobID))),
            ("reminder.put", alices.refusal(alices.planner, Ops.reminderPut, ReminderPutRequest(userId: bobID, activity: .workout, time: LocalTime("07:00")))),
            ("reminder.put (bob's id)", alices.refusal(alices.planner, Ops.reminderPut,
                                                       ReminderPutRequest(id: reminder.id, userId: bobID, activity: .noalc, time: LocalTime("10:00")))),
            ("reminder.upcoming", alices.refusal(alices.planner, Ops.reminderUpcoming, UpcomingRequest(userId: bobID))),
            ("session.log", alices.refusal(alices.logger, Ops.sessionLog, SessionLogRequest(userId: bobID, activity: .workout,
                                                                                              start: instant("2026-11-16T11:00:00Z"), end: instant("2026-11-16T11:30:00Z")))),
            ("session.list", alices.refusal(alices.logger, Ops.sessionList, SessionListRequest(userId: bobID, from: instant("2026-11-01T00:00:00Z"),
                                                                                                until: instant("2026-12-01T00:00:00Z")))),
            ("noalc.log", alices.refusal(alices.logger, Ops.noalcLog, NoAlcLogRequest(userId: bobID, day: LocalDay("2026-11-14")!, level: .wild))),
            ("noalc.list", alices.refusal(alices.logger, Ops.noalcList, DayRangeRequest(userId: bobID, from: LocalDay("2026-11-01")!, until: LocalDay("2026-11-30")!))),
            ("daily.summary", alices.refusal(alices.logger, Ops.dailySummary, DailySummaryRequest(userId: bobID, from: LocalDay("2026-11-01")!,
                                                                                                   until: LocalDay("2026-11-30")!, timeZone: ZoneID("UTC")!))),
            ("notification.list", alices.refusal(alices.notifier, Ops.notificationList, NotificationListRequest(userId: bobID))),
            ("streak.get", alices.refusal(alices.streak, Ops.streakGet, StreakGetRequest(userId: bobID))),
            ("calendar.get", alices.refusal(alices.streak, Ops.calendarGet, CalendarGetRequest(userId: bobID, month: "2026-11")!)),
        ]
        for (op, refusal) in ownUserRequests {
            #expect(refusal?.code == .unauthorized, "\(op) for bob as alice: \(String(describing: refusal))")
        }
        // Bob's records by id: exactly as unknown ids.
        let unknown = RecordID()
        let byId: [(String, WireError?, WireError?)] = [
            ("reminder.get", alices.refusal(alices.planner, Ops.reminderGet, ReminderIDRequest(id: reminder.id)),
             alices.refusal(alices.planner, Ops.reminderGet, ReminderIDRequest(id: unknown))),
            ("reminder.delete", alices.refusal(alices.planner, Ops.reminderDelete, ReminderIDRequest(id: reminder.id)),
             alices.refusal(alices.planner, Ops.reminderDelete, ReminderIDRequest(id: unknown))),
            ("reminder.restore", alices.refusal(alices.planner, Ops.reminderRestore, RestoreRequest(reminderId: reminder.id, at: instant("2026-11-17T08:00:00Z"))),
             alices.refusal(alices.planner, Ops.reminderRestore, RestoreRequest(reminderId: unknown, at: instant("2026-11-17T08:00:00Z")))),
            ("reminder.test", alices.refusal(alices.planner, Ops.reminderTest, ReminderTestRequest(reminderId: reminder.id)),
             alices.refusal(alices.planner, Ops.reminderTest, ReminderTestRequest(reminderId: unknown))),
            ("notification.action", alices.refusal(alices.notifier, Ops.notificationAction, NotificationActionRequest(notificationId: notification, actionId: "noalc.wild")),
             alices.refusal(alices.notifier, Ops.notificationAction, NotificationActionRequest(notificationId: "\(unknown)@2026-11-16T08:00:00Z", actionId: "noalc.wild"))),
        ]
        for (op, refusal, asUnknown) in byId {
            #expect(refusal?.code == .notFound, "\(op) on bob's record as alice: \(String(describing: refusal))")
            #expect(refusal?.code == asUnknown?.code && refusal?.field == asUnknown?.field, "\(op): bob's record is told apart from an unknown id")
        }
        // Alice's own reminder with the id of bob's: a conflict (PROTOCOL), never bob's record changed.
        let taken = alices.refusal(alices.planner, Ops.reminderPut, ReminderPutRequest(id: reminder.id, userId: UserID("alice")!, activity: .workout,
                                                                                    time: LocalTime("06:00")))
        #expect(taken?.code == .conflict, "reminder.put as alice with bob's reminder id: \(String(describing: taken))")
        let sessionTaken = alices.refusal(alices.logger, Ops.sessionLog, SessionLogRequest(id: session.id, userId: UserID("alice")!, activity: .workout,
                                                                                          start: instant("2026-11-16T11:00:00Z"), end: instant("2026-11-16T11:30:00Z")))
        #expect(sessionTaken?.code == .conflict, "session.log as alice with bob's session id: \(String(describing: sessionTaken))")
        // Clock ops are for services and admins.
        #expect(alices.refusal(alices.planner, Ops.clockSet, ClockSetRequest(now: instant("2026-11-20T08:00:00Z")))?.code == .unauthorized)
        // health is for everyone.
        #expect(try alices.logger.call(Ops.health, NoFields(), timeoutMilliseconds: 5000).service == "session-logger")

        // Nothing changed and nothing was published (given time to, had a refusal let something through).
        Thread.sleep(forTimeInterval: 0.5)  // time for what must not happen
        #expect(try system.lastSeqs() == before)
        let stored = try bobs.planner.call(Ops.reminderGet, ReminderIDRequest(id: reminder.id), timeoutMilliseconds: 5000)
        #expect(stored == reminder)
        let settings = try bobs.planner.call(Ops.userGet, UserRequest(userId: bobID), timeoutMilliseconds: 5000)
        #expect(settings.timeZone == ZoneID("Europe/Berlin")! && !settings.paused)
        let entries = try bobs.logger.call(Ops.noalcList, DayRangeRequest(userId: bobID, from: LocalDay("2026-11-01")!, until: LocalDay("2026-11-30")!),
                                           timeoutMilliseconds: 5000).entries
        #expect(entries.map(\.day) == [LocalDay("2026-11-15")!])
        #expect(try bobs.logger.call(Ops.sessionList, SessionListRequest(userId: bobID, from: instant("2026-11-01T00:00:00Z"), until: instant("2026-12-01T00:00:00Z")),
                                     timeoutMilliseconds: 5000).sessions.map(\.id) == [session.id])

        // The same through lht as alice: status 1 with the service's line.
        let viaLHT = try system.lht(["reminder", "delete", "\(reminder.id)"], as: alice.flags)
        #expect(viaLHT.status == 1)
        #expect(viaLHT.stderr.hasPrefix("error: not_found (data.id): "))
        let listing = try system.lht(["reminder", "list", "--user", "bob"], as: alice.flags)
        #expect(listing.status == 1)
        #expect(listing.stderr.hasPrefix("error: unauthorized (data.userId): "))
    }

    @Test func intakeMessagesForAnotherUserAreDroppedAndCounted() throws {
        let system = try LHTSystem(services: [.planner], keys: true)
        let alice = try system.addUser("alice")
        let alices = try ClientsOf(system, alice.secret)
        // The intake is fire-and-forget (PUB → SUB): no client type for it, so a raw PUB with alice's CURVE keys.
        let publisher = try Socket(system.context, .pub, linger: 1000)
        defer { publisher.close() }
        try publisher.secure(with: alices.credentials(.sessionLogger))
        try publisher.connect(system.logger.endpoints["intake"]!)
        func send(_ user: String, day: String) throws {
            let frame = #"{"v":1,"op":"noalc.log","data":{"userId":"\#(user)","day":"\#(day)","level":"wild"}}"#
            _ = try publisher.send(multipart: [Data("intake".utf8), Data(frame.utf8)])
        }
        let admin = try system.adminClient(.sessionLogger)
        let before = try admin.call(Ops.health, NoFields(), timeoutMilliseconds: 5000).counters["unauthorized"] ?? 0
        // Alice's own arrives (so the channel works); bob's is dropped and counted. Both are sent again until
        // alice's is in: intake is lossy, and the first may go before the connection is up (the slow joiner).
        try waitUntil(timeout: 30, interval: 0.1, "alice's intake entry") {
            try send("bob", day: "2026-11-14")
            try send("alice", day: "2026-11-15")
            return try !admin.call(Ops.noalcList, DayRangeRequest(userId: UserID("alice")!, from: LocalDay("2026-11-01")!, until: LocalDay("2026-11-30")!),
                                   timeoutMilliseconds: 5000).entries.isEmpty
        }
        try waitUntil(timeout: 15, interval: 0.1, "the unauthorized counter") {
            (try admin.call(Ops.health, NoFields(), timeoutMilliseconds: 5000).counters["unauthorized"] ?? 0) > before
        }
        #expect(try admin.call(Ops.noalcList, DayRangeRequest(userId: UserID("bob")!, from: LocalDay("2026-11-01")!, until: LocalDay("2026-11-30")!),
                               timeoutMilliseconds: 5000).entries.isEmpty)
    }

    // MARK: Events

    @Test func aUsersSubscriptionsReceiveOnlyItsOwnTopics() throws {
        let system = try LHTSystem(services: [.planner, .notifier], keys: true)
        let alice = try system.addUser("alice"), bob = try system.addUser("bob")
        let alices = try ClientsOf(system, alice.secret)
        let bobs = try ClientsOf(system, bob.secret)
        let notifier = system.services[.notifier]!
        let aliceCredentials = try alices.credentials(.notifier)

        // The socket level: what the publisher grants alice for each prefix.
        let foreign = ["", "notify.", "notify.bob.", "notify.bob", "notify.alic"]
        let followers = try foreign.map { prefix in
            try EventFollower(context: system.context, eventsEndpoints: [notifier.events], apiEndpoints: [notifier.api], prefixes: [prefix],
                              credentials: aliceCredentials)
        }
        let own = try Subscription(context: system.context, eventsEndpoints: [notifier.events], apiEndpoints: [notifier.api],
                                   prefixes: ["notify.alice."], after: nil, timeoutMilliseconds: 5000, credentials: aliceCredentials)
        // Control: the admin's "" sees bob's notifications, so they were published.
        let everything = try Subscription(context: system.context, eventsEndpoints: [notifier.events], apiEndpoints: [notifier.api],
                                          prefixes: [""], after: nil, timeoutMilliseconds: 5000, credentials: system.credentialsAsAdmin(.notifier))
        // "From now on" starts at the first heartbeat each hears: from then on its subscription is in place.
        for subscription in [own, everything] {
            try waitUntil(timeout: 20, interval: 0, "a heartbeat at a subscription") {
                _ = try subscription.next(timeoutMilliseconds: 200)
                return subscription.checkedThrough != nil
            }
        }

        let bobsReminder = try bobs.planner.call(Ops.reminderPut, ReminderPutRequest(userId: UserID("bob")!, activity: .workout, time: LocalTime("12:00")),
                                                 timeoutMilliseconds: 5000).reminder
        let alicesReminder = try alices.planner.call(Ops.reminderPut, ReminderPutRequest(userId: UserID("alice")!, activity: .mindfulness, time: LocalTime("12:00")),
                                                     timeoutMilliseconds: 5000).reminder
        for _ in 0..<2 { _ = try bobs.planner.call(Ops.reminderTest, ReminderTestRequest(reminderId: bobsReminder.id), timeoutMilliseconds: 5000) }
        var seen: [ReceivedEvent] = []
        try waitUntil(timeout: 10, interval: 0.1, "bob's two notifications at the admin's subscription") {
            seen += try everything.next(timeoutMilliseconds: 200)
            return seen.filter { $0.topic.hasPrefix("notify.bob.") }.count >= 2
        }
        _ = try alices.planner.call(Ops.reminderTest, ReminderTestRequest(reminderId: alicesReminder.id), timeoutMilliseconds: 5000)
        var mine: [ReceivedEvent] = []
        try waitUntil(timeout: 10, interval: 0.1, "alice's notification on notify.alice.") {
            mine += try own.next(timeoutMilliseconds: 200)
            return !mine.isEmpty
        }
        #expect(mine.allSatisfy { $0.topic.hasPrefix("notify.alice.") })
        // Heartbeats (a second apart) pass; events for the foreign prefixes never do, not even alice's own for "notify.alic".
        Thread.sleep(forTimeInterval: 1.5)  // time for anything wrongly let through to arrive
        for (prefix, follower) in zip(foreign, followers) {
            let events = follower.drain()
            #expect(events.isEmpty, "alice's subscription \"\(prefix)\" received \(events.map(\.topic))")
        }
    }

    @Test func eventsSinceAsAUserReturnsOnlyItsOwnEvents() throws {
        let system = try LHTSystem(services: [.planner], keys: true)
        let alice = try system.addUser("alice"), bob = try system.addUser("bob")
        let alices = try ClientsOf(system, alice.secret)
        let bobs = try ClientsOf(system, bob.secret)
        for (clients, user) in [(bobs, "bob"), (alices, "alice"), (bobs, "bob"), (alices, "alice")] {
            _ = try clients.logger.call(Ops.sessionLog, SessionLogRequest(userId: UserID(user)!, activity: .workout, start: instant("2026-11-16T07:00:00Z"),
                                                                          end: instant("2026-11-16T07:30:00Z")), timeoutMilliseconds: 5000)
        }
        let all = try system.adminClient(.sessionLogger).call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 100), timeoutMilliseconds: 5000)
        #expect(all.events.count == 4)
        let page = try alices.logger.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 100), timeoutMilliseconds: 5000)
        #expect(page.events.count == 2)
        #expect(page.events.allSatisfy { $0.topic.hasPrefix("session.logged.alice.") })
        #expect(page.lastSeq == all.lastSeq)
        // Filtered before the limit: one event is alice's first, not the log's first.
        let one = try alices.logger.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1), timeoutMilliseconds: 5000)
        #expect(one.events.map(\.seq) == [all.events[1].seq])
    }
}
