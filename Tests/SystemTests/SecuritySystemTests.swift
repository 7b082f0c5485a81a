import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// PROTOCOL "Security" against the real executables: keys made by the real `lht keys` on disk, every
/// service started with `--keys`, real CurveZMQ handshakes through each service's ZAP handler. Clients
/// are LHTClient's `ServiceClient`/`Subscription`/`EventFollower` with `CurveCredentials`; raw sockets
/// only where the point is that nothing answers. Serialized: the revocation deadline is a wall-clock one.
@Suite(.serialized) struct SecuritySystemTests {
    // MARK: Handshakes

    @Test func unknownKeyPlaintextWrongServerKeyAndNoIdentityGetNoAnswer() throws {
        let system = try LHTSystem(services: [.planner], keys: true)
        let keys = system.keyDirectory
        let api = system.logger.api
        let admin = try keys.adminCertificate()
        let loggerKey = try keys.servicePublicKey(ServiceName.sessionLogger.rawValue)

        // A certificate without identity in clients/: present, but not let in (the handler sees it within 5 s).
        let anonymous = try Certificate.generate()
        try anonymous.writePublic(to: keys.clientsPath + "/anonymous.key")
        // Control: the admin's key is answered, so silence below is the refusal and not a dead service.
        #expect(try rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: loggerKey)) })
        Thread.sleep(forTimeInterval: 2.5)

        let stranger = try Certificate.generate(metadata: ["user-id": "alice"])  // claims an identity, but is not in clients/
        #expect(try !rawHealth(api) { _ in }, "a plaintext client was answered")
        #expect(try !rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: stranger.publicKey, secretKey: stranger.secretKey!, serverKey: loggerKey)) },
                "an unknown key was answered")
        let plannerKey = try keys.servicePublicKey(ServiceName.reminderPlanner.rawValue)
        #expect(try !rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: plannerKey)) },
                "a client with the wrong server key was answered")
        #expect(try !rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: anonymous.publicKey, secretKey: anonymous.secretKey!, serverKey: loggerKey)) },
                "a certificate without identity was answered")

        // The refusals the ZAP handler saw are counted (plaintext and a wrong server key fail before it).
        let health = try system.adminClient(.sessionLogger).call(Ops.health, NoFields(), timeoutMilliseconds: 5000)
        #expect((health.counters["authRefused.unknown_key"] ?? 0) >= 1)
        #expect((health.counters["authRefused.no_identity"] ?? 0) >= 1)
        // lht says "no answer" (status 3) for an unknown key, and a usable key gets through.
        let strangerFile = temporaryDirectory("lht-stranger").appendingPathComponent("stranger")
        try stranger.write(basePath: strangerFile.path)
        let refused = try system.lht(["health", "session-logger", "--timeout", "1"], as: ["--cert", strangerFile.path + ".key_secret", "--server-keys", keys.path])
        #expect(refused.status == 3)
        #expect(try system.lht(["health", "session-logger"]).status == 0)
    }

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

        // Nothing changed and nothing was published.
        Thread.sleep(forTimeInterval: 0.5)
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
        Thread.sleep(forTimeInterval: 0.5)
        func send(_ user: String, day: String) throws {
            let frame = #"{"v":1,"op":"noalc.log","data":{"userId":"\#(user)","day":"\#(day)","level":"wild"}}"#
            _ = try publisher.send(multipart: [Data("intake".utf8), Data(frame.utf8)])
        }
        let admin = try system.adminClient(.sessionLogger)
        let before = try admin.call(Ops.health, NoFields(), timeoutMilliseconds: 5000).counters["unauthorized"] ?? 0
        try send("bob", day: "2026-11-14")
        try send("alice", day: "2026-11-15")
        // Alice's own arrives (so the channel works); bob's is dropped and counted.
        try waitUntil(timeout: 5, interval: 0.1, "alice's intake entry") {
            try !admin.call(Ops.noalcList, DayRangeRequest(userId: UserID("alice")!, from: LocalDay("2026-11-01")!, until: LocalDay("2026-11-30")!),
                            timeoutMilliseconds: 5000).entries.isEmpty
        }
        try waitUntil(timeout: 5, interval: 0.1, "the unauthorized counter") {
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
        Thread.sleep(forTimeInterval: 0.5)

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
        Thread.sleep(forTimeInterval: 1.5)
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

    // MARK: Revocation

    @Test func aRevokedKeyIsRefusedOnANewConnectionWithinFiveSeconds() throws {
        let system = try LHTSystem(services: [.planner], keys: true)
        let carol = try system.addUser("carol")
        let open = try ClientsOf(system, carol.secret)
        #expect(try open.planner.call(Ops.userGet, UserRequest(userId: UserID("carol")!), timeoutMilliseconds: 5000).timeZone.description.isEmpty == false)

        let revoke = try runLHT(["keys", "revoke", "carol", "--keys", system.keys!.path])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(revoke.stdout.hasPrefix("revoked carol ("))
        let revokedAt = Date()
        // A new connection (a new lht process each time) is refused: no answer, status 3.
        var last = try system.lht(["user", "show", "--user", "carol", "--timeout", "0.5"], as: carol.flags)
        while last.status != 3 && Date().timeIntervalSince(revokedAt) < 8 {
            last = try system.lht(["user", "show", "--user", "carol", "--timeout", "0.5"], as: carol.flags)
        }
        #expect(last.status == 3, "\(last.stdout) \(last.stderr)")
        #expect(Date().timeIntervalSince(revokedAt) < 5.5, "the revoked key was let in for \(Date().timeIntervalSince(revokedAt)) s")
        // The connection that was open already: unauthorized, for every request.
        #expect(open.refusal(open.planner, Ops.userGet, UserRequest(userId: UserID("carol")!))?.code == .unauthorized)
        // And it stays out: a fresh connection some time later is refused too.
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try system.lht(["user", "show", "--user", "carol", "--timeout", "1"], as: carol.flags).status == 3)
    }

    // MARK: The whole chain

    @Test func sessionCancellationNotificationAndQuickActionWithKeys() throws {
        let system = try LHTSystem(services: [.planner, .notifier, .streak], keys: true)
        let henning = try system.addUser("henning").flags
        func lht(_ arguments: [String]) throws -> ProcessRun {
            let run = try system.lht(arguments, as: henning)
            #expect(run.status == 0, "\(arguments): \(run.stderr)")
            return run
        }
        _ = try lht(["user", "set", "--zone", "Europe/Berlin", "--locale", "en", "--user", "henning"])
        let mindfulness = try lht(["reminder", "add", "mindfulness", "--time", "18:00", "--user", "henning"])
        #expect(mindfulness.stdout.hasPrefix("added reminder "))
        let noalcAdded = try lht(["reminder", "add", "noalc", "--time", "09:00", "--user", "henning"])
        let noalc = try #require(firstMatch(#"^added reminder ([0-9a-f-]{36}): "#, in: noalcAdded.stdout))
        let logged = try lht(["session", "log", "mindfulness", "--start", "2026-11-16T10:00:00+01:00", "--end", "2026-11-16T10:15:00+01:00",
                              "--user", "henning"])
        let session = try #require(firstMatch(#"session ([0-9a-f-]{36})"#, in: logged.stdout))
        // session → cancellation: the planner followed the logger over CURVE.
        _ = try system.eventually(["reminder", "upcoming", "--days", "1", "--user", "henning"], as: henning) {
            $0.contains("18:00  mindfulness  cancelled  \(session)")
        }
        // → notification, to henning's own subscription (the admin moves the clock).
        let subscriber = try system.startSubscribe(["--user", "henning", "--count", "1", "--max-wait", "20"], as: henning)
        try system.setClock("2026-11-16T09:30:00+01:00")
        let received = try subscriber.finish()
        #expect(received.status == 0, "\(received.stderr)")
        let line = try JSONDecoder().decode(JSONValue.self, from: Data(received.stdout.utf8))
        #expect(line["topic"]?.stringValue == "notify.henning.noalc")
        #expect(line["event"]?["data"]?["notificationId"]?.stringValue == "\(noalc)@2026-11-16T08:00:00Z")
        // → quick action: the notifier logs the level with the session logger (service to service over CURVE).
        let action = try lht(["action", "\(noalc)@2026-11-16T08:00:00Z", "steady"])
        #expect(action.stdout.range(of: #"^logged NoAlc steady for 2026-11-15 \([0-9a-f-]{36}\)\n$"#, options: .regularExpression) != nil)
        _ = try system.eventually(["streak", "--as-of", "2026-11-15", "--user", "henning"], as: henning) { $0.hasPrefix("streak       1 day") }
        // The 18:00 occurrence was covered: suppressed, not sent.
        try system.setClock("2026-11-16T18:30:00+01:00")
        let upcoming = try lht(["reminder", "upcoming", "--days", "1", "--user", "henning"])
        #expect(upcoming.stdout.contains("18:00  mindfulness  suppressed  \(session)"))
        // Every service answers henning's own key.
        let health = try system.lht(["health"], as: henning)
        #expect(health.status == 0, "\(health.stderr)")
    }

    // MARK: Binding without keys

    @Test func withoutKeysANonLoopbackBindExitsTwoUnlessInsecure() throws {
        let data = temporaryDirectory("lht-bind")
        let refused = try runProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", data.path, "--api", "tcp://0.0.0.0:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*",
        ])
        #expect(refused.status == 2)
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("--api") && refused.stderr.contains("--keys") && refused.stderr.contains("--insecure"))
        let intake = try runProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", data.path, "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://*:*",
        ])
        #expect(intake.status == 2)
        #expect(intake.stderr.split(separator: "\n").count == 1, "\(intake.stderr)")

        // --insecure: it starts, and says so.
        let insecure = try userProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", data.path, "--api", "tcp://0.0.0.0:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*", "--insecure",
        ])
        defer { insecure.terminate() }
        try insecure.waitForOutput("ready session-logger ")
        // PROTOCOL: --insecure "logs a warning at start".
        try insecure.waitForError("warning", timeout: 2)

        // With keys a service may bind any address: CURVE protects it.
        let keys = try makeKeyDirectory()
        let keyed = try ServiceProcess("session-logger", arguments: ["--keys", keys.path, "--api", "tcp://0.0.0.0:*"])
        #expect(keyed.api.hasPrefix("tcp://0.0.0.0:"))
    }

    // MARK: Files

    @Test func dataDirectoryFilesAndSecretsArePrivateUnderUmask022() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let keys = try makeKeyDirectory()
        let data = temporaryDirectory("lht-modes").appendingPathComponent("nested/session-logger")
        let logger = try ServiceProcess("session-logger", dataDirectory: data, arguments: ["--keys", keys.path])
        let out = temporaryDirectory("lht-modes-out").appendingPathComponent("phone")
        let added = try runLHT(["keys", "add-user", "alice", "--out", out.path, "--keys", keys.path])
        #expect(added.status == 0, "\(added.stderr)")
        let alice = try Certificate.loadSecret(out.appendingPathComponent("alice.key_secret").path)
        let client = ServiceClient(context: try Context(), endpoint: logger.api, credentials: CurveCredentials(
            publicKey: alice.publicKey, secretKey: alice.secretKey!, serverKey: try KeyDirectory(keys.path).servicePublicKey("session-logger")))
        try waitUntil(timeout: 6, interval: 0.1, "alice let in") {
            (try? client.call(Ops.sessionLog, SessionLogRequest(userId: UserID("alice")!, activity: .workout, start: instant("2026-11-16T07:00:00Z"),
                                                                end: instant("2026-11-16T07:30:00Z")), timeoutMilliseconds: 500)) != nil
        }

        #expect(mode(data) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: data.path)
        // On PostgreSQL the directory holds no database files, and what it holds is private all the same.
        #expect(SystemTestBackend.isPostgreSQL || files.contains("session-logger.events") && files.contains("session-logger.projection.sqlite"), "\(files)")
        for file in files { #expect(mode(data.appendingPathComponent(file)) == 0o600, "\(file): \(String(mode(data.appendingPathComponent(file)), radix: 8))") }

        // The key directory: directories 0700, every file 0600; the pair add-user wrote too.
        for directory in [keys, keys.appendingPathComponent("services"), keys.appendingPathComponent("clients"), out] {
            #expect(mode(directory) == 0o700, "\(directory.path)")
        }
        var secrets = 0
        for directory in [keys, keys.appendingPathComponent("services"), keys.appendingPathComponent("clients"), out] {
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".key") || file.hasSuffix(".key_secret") {
                #expect(mode(directory.appendingPathComponent(file)) == 0o600, "\(directory.path)/\(file)")
                if file.hasSuffix(".key_secret") { secrets += 1 }
            }
        }
        #expect(secrets == 7)  // four services and the http-gateway, the admin, alice
    }

    @Test func aSecretReadableByGroupIsExitTwoWithOneLine() throws {
        let keys = try makeKeyDirectory()
        let secret = keys.appendingPathComponent("services/session-logger.key_secret")
        #expect(chmod(secret.path, 0o640) == 0)
        let run = try runProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", temporaryDirectory("lht-open").path, "--keys", keys.path,
            "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*",
        ])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty, "it printed \(run.stdout)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.contains("chmod 600 \(secret.path)"))

        // lht refuses a --cert readable by others the same way.
        let out = temporaryDirectory("lht-open-cert")
        #expect(try runLHT(["keys", "add-user", "alice", "--out", out.path, "--keys", keys.path]).status == 0)
        let cert = out.appendingPathComponent("alice.key_secret")
        #expect(chmod(cert.path, 0o644) == 0)
        let lht = try runLHT(["health", "--cert", cert.path, "--server-keys", keys.path])
        #expect(lht.status == 2)
        #expect(lht.stderr.split(separator: "\n").count == 1, "\(lht.stderr)")
        #expect(lht.stderr.contains("chmod 600"))
    }

    // MARK: lht keys

    @Test func lhtKeysInitAddUserListAndRevoke() throws {
        let keys = try makeKeyDirectory()
        // init refuses a directory that is not empty, keys or not.
        #expect(try runLHT(["keys", "init", keys.path]).status == 2)
        let other = temporaryDirectory("lht-keys-other")
        #expect(FileManager.default.createFile(atPath: other.appendingPathComponent("notes.txt").path, contents: Data("x".utf8)))
        let refused = try runLHT(["keys", "init", other.path])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("not empty"))

        let out = temporaryDirectory("lht-keys-out")
        let added = try runLHT(["keys", "add-user", "alice", "--out", out.path, "--keys", keys.path])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("alice.key_secret"))
        let pair = try Certificate.loadSecret(out.appendingPathComponent("alice.key_secret").path)
        let published = try Certificate.loadPublic(keys.appendingPathComponent("clients/alice.key").path)
        #expect(published.publicKey == pair.publicKey && published.metadata["user-id"] == "alice")
        #expect(try Certificate.loadPublic(out.appendingPathComponent("alice.key").path).publicKey == pair.publicKey)
        // Twice: refused, the first pair kept.
        #expect(try runLHT(["keys", "add-user", "alice", "--out", temporaryDirectory("lht-keys-out2").path, "--keys", keys.path]).status == 2)
        #expect(try runLHT(["keys", "add-user", "not a user", "--keys", keys.path]).status == 2)
        #expect(try runLHT(["keys", "add-user", "alice", "--out", out.path]).status == 2)  // no --keys, no LHT_KEYS

        // A certificate without identity shows its problem.
        try Certificate.generate().writePublic(to: keys.appendingPathComponent("clients/mystery.key").path)
        let list = try runLHT(["keys", "list", "--keys", keys.path])
        #expect(list.status == 0)
        let lines = list.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("name") == true)
        #expect(lines.contains { $0.hasPrefix("admin ") && $0.contains(" admin ") })
        #expect(lines.contains { $0.hasPrefix("alice ") && $0.contains("user alice") && $0.contains(pair.fingerprint) })
        #expect(lines.contains { $0.hasPrefix("mystery ") && $0.contains("needs exactly one of") })
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(try runLHT(["keys", "list", "--json", "--keys", keys.path]).stdout.utf8))
        #expect(json["clients"]?.arrayValue.compactMap { $0["name"]?.stringValue } == ["admin", "alice", "mystery"])

        #expect(try runLHT(["keys", "revoke", "alice", "--keys", keys.path]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: keys.appendingPathComponent("clients/alice.key").path))
        #expect(try runLHT(["keys", "revoke", "alice", "--keys", keys.path]).status == 2)
        #expect(try runLHT(["keys", "revoke", "../services/notifier", "--keys", keys.path]).status == 2)
        #expect(FileManager.default.fileExists(atPath: keys.appendingPathComponent("services/notifier.key").path))
    }
}

// MARK: Helpers

extension LHTSystem {
    var keyDirectory: KeyDirectory { KeyDirectory(keys!.path) }

    /// The service's process; nil when this system did not start it.
    func process(_ service: ServiceName) -> ServiceProcess? {
        switch service {
        case .sessionLogger: logger
        case .reminderPlanner: services[.planner]
        case .notifier: services[.notifier]
        case .noalcStreak: services[.streak]
        }
    }

    func credentialsAsAdmin(_ service: ServiceName) throws -> CurveCredentials {
        try adminCredentials(keyDirectory, service)
    }

    func adminClient(_ service: ServiceName) throws -> ServiceClient {
        ServiceClient(context: context, endpoint: process(service)!.api, credentials: try credentialsAsAdmin(service))
    }

    /// Each running service's newest event seq, as the admin's `health` tells it.
    func lastSeqs() throws -> [String: Int64] {
        var seqs: [String: Int64] = [:]
        for service in ServiceName.allCases where process(service) != nil {
            seqs[service.rawValue] = try adminClient(service).call(Ops.health, NoFields(), timeoutMilliseconds: 5000).lastSeq
        }
        return seqs
    }

    /// Whether every running service has applied all that its upstreams published, and nothing
    /// was published meanwhile: what one event set off has run its course.
    func settled() throws -> Bool {
        let seqs = try lastSeqs()
        for service in ServiceName.allCases where process(service) != nil {
            let health = try adminClient(service).call(Ops.health, NoFields(), timeoutMilliseconds: 5000)
            if health.upstreams.contains(where: { $0.appliedSeq < seqs[$0.name] ?? 0 }) { return false }
        }
        return try lastSeqs() == seqs
    }
}

/// One user's clients of every service of a system, with that user's certificate.
struct ClientsOf {
    let certificate: Certificate
    let system: LHTSystem
    let logger: ServiceClient, planner: ServiceClient, notifier: ServiceClient, streak: ServiceClient

    init(_ system: LHTSystem, _ secret: URL) throws {
        self.system = system
        certificate = try Certificate.loadSecret(secret.path)
        let context = system.context
        let keys = system.keyDirectory
        let certificate = certificate
        func client(_ service: ServiceName) throws -> ServiceClient {
            let endpoint = system.process(service)?.api ?? "tcp://127.0.0.1:1"
            return ServiceClient(context: context, endpoint: endpoint, credentials: CurveCredentials(
                publicKey: certificate.publicKey, secretKey: certificate.secretKey!, serverKey: try keys.servicePublicKey(service.rawValue)))
        }
        logger = try client(.sessionLogger)
        planner = try client(.reminderPlanner)
        notifier = try client(.notifier)
        streak = try client(.noalcStreak)
    }

    func credentials(_ service: ServiceName) throws -> CurveCredentials {
        CurveCredentials(publicKey: certificate.publicKey, secretKey: certificate.secretKey!,
                         serverKey: try system.keyDirectory.servicePublicKey(service.rawValue))
    }

    /// The service's refusal of `request`, nil if it was accepted. No answer at all is `unavailable`.
    func refusal<Input, Output>(_ client: ServiceClient, _ op: Op<Input, Output>, _ request: Input) -> WireError? {
        do {
            _ = try client.call(op, request, timeoutMilliseconds: 5000)
            return nil
        } catch {
            return error
        }
    }
}

/// Whether a `health` request on a raw DEALER, set up by `configure` (CURVE options or none), is answered within 1.5 s.
private func rawHealth(_ endpoint: String, configure: (Socket) throws -> Void) throws -> Bool {
    let context = try Context()
    defer { context.shutdown() }
    let socket = try Socket(context, .dealer)
    defer { socket.close() }
    try configure(socket)
    try socket.connect(endpoint)
    _ = try socket.send(multipart: [Data(), Data(#"{"v":1,"op":"health","data":{}}"#.utf8)])
    return try Poller.readable([socket], timeoutMilliseconds: 1500)[0]
}

private func instant(_ text: String) -> Instant { Instant(rfc3339: text)! }

private func mode(_ url: URL) -> mode_t {
    var info = stat()
    guard stat(url.path, &info) == 0 else { return 0 }
    return info.st_mode & 0o777
}
