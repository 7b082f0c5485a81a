import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// SEMANTICS §4 and §2 (target day) through the real session logger, planner (manual clock) and
/// notifier executables. Monday 2026-11-16 in Europe/Berlin (UTC+1).
@Suite struct NotifierSystemTests {
    static let mondayMorning = "2026-11-16T08:00:00+01:00"

    @Test func contentPerActivityAndLocaleAndTheReminderOwnTextWins() throws {
        let rig = try NotifierRig()
        var reminders: [String: [String: String]] = [:]
        for (user, locale) in [("anke", "de"), ("ann", "en")] {
            try rig.planner.user(user, locale: locale)
            reminders[user] = try ["noalc": rig.planner.reminder(user, "noalc", "09:00"),
                                   "workout": rig.planner.reminder(user, "workout", "18:00"),
                                   "mindfulness": rig.planner.reminder(user, "mindfulness", "20:00")]
        }
        try rig.planner.user("own", locale: "de")
        let own = try rig.planner.plannerClient.ok("reminder.put", [
            "userId": "own", "activity": "mindfulness", "time": "19:00", "title": "Atmen", "body": "Jetzt, bitte.",
        ])["id"]!.stringValue!
        let subscriber = try EventSubscriber(rig.notifier.events, context: rig.context, prefixes: ["notify."])

        try rig.planner.advance(to: "2026-11-16T20:00:00+01:00")
        let anke = try rig.notifications("anke", count: 3)
        let ann = try rig.notifications("ann", count: 3)

        func expected(_ user: String, _ activity: String, _ at: String, _ locale: String, title: String, body: String,
                      actions: [[String: Any]], deepLink: String, targetDay: String? = nil, reminder: String? = nil) -> JSONValue {
            let id = reminder ?? reminders[user]![activity]!
            var object: [String: Any] = [
                "notificationId": "\(id)@\(at)", "userId": user, "activity": activity, "title": title, "body": body,
                "category": activity, "actions": actions, "deepLink": deepLink, "reminderId": id, "scheduledFor": at,
                "locale": locale, "test": false,
            ]
            if let targetDay { object["targetDay"] = targetDay }
            return json(object)
        }
        let levels: [[String: Any]] = [["id": "noalc.steady", "title": "💧 Steady", "opensApp": false],
                                       ["id": "noalc.easy", "title": "✨ Easy", "opensApp": false],
                                       ["id": "noalc.wild", "title": "💥 Wild", "opensApp": false]]
        #expect(anke.map { without($0, "seq", "sentAt") } == [
            expected("anke", "noalc", "2026-11-16T08:00:00Z", "de", title: "NoAlc Check-in", body: "Wie war gestern?",
                     actions: levels, deepLink: "lht://noalc?day=2026-11-15", targetDay: "2026-11-15"),
            expected("anke", "workout", "2026-11-16T17:00:00Z", "de", title: "Zeit für dein Workout", body: "Zeit für dein tägliches Workout! 💪",
                     actions: [["id": "open.workout", "title": "Workout starten", "opensApp": true]], deepLink: "lht://open/workout"),
            expected("anke", "mindfulness", "2026-11-16T19:00:00Z", "de", title: "Zeit für deine Meditation", body: "Nimm dir einen Moment zum Atmen 🌿",
                     actions: [["id": "open.meditation", "title": "Meditation starten", "opensApp": true]], deepLink: "lht://open/meditation"),
        ])
        #expect(ann.map { without($0, "seq", "sentAt") } == [
            expected("ann", "noalc", "2026-11-16T08:00:00Z", "en", title: "NoAlc check-in", body: "How was yesterday?",
                     actions: levels, deepLink: "lht://noalc?day=2026-11-15", targetDay: "2026-11-15"),
            expected("ann", "workout", "2026-11-16T17:00:00Z", "en", title: "Time for your workout", body: "Time for your daily workout! 💪",
                     actions: [["id": "open.workout", "title": "Start Workout", "opensApp": true]], deepLink: "lht://open/workout"),
            expected("ann", "mindfulness", "2026-11-16T19:00:00Z", "en", title: "Time to meditate", body: "Take a moment to breathe 🌿",
                     actions: [["id": "open.meditation", "title": "Start Meditation", "opensApp": true]], deepLink: "lht://open/meditation"),
        ])
        let mine = try rig.notifications("own", count: 1)
        #expect(mine.map { without($0, "seq", "sentAt") } == [
            expected("own", "mindfulness", "2026-11-16T18:00:00Z", "de", title: "Atmen", body: "Jetzt, bitte.",
                     actions: [["id": "open.meditation", "title": "Meditation starten", "opensApp": true]],
                     deepLink: "lht://open/meditation", reminder: own),
        ])

        // Published on notify.<userId>.<activity>; each notification's seq is its event's, and the event carries it whole.
        let events = try subscriber.receive(7)
        #expect(events.count == 7)
        for event in events {
            let data = event.envelope["data"]!
            #expect(event.topic == "notify.\(data["userId"]!.stringValue!).\(data["activity"]!.stringValue!)")
            #expect(event.envelope["type"]?.stringValue == "notify" && event.envelope["source"]?.stringValue == "notifier")
            #expect(data["seq"] == event.envelope["seq"])
            #expect((anke + ann + mine).contains(data))
        }
        #expect(Set(events.compactMap { $0.envelope["seq"]?.intValue }) == Set(1...7))
        #expect(Instant(rfc3339: anke[0]["sentAt"]!.stringValue!) != nil)
    }

    @Test func noalcTargetDayIsYesterdayInTheMorningAndTodayFromSixPm() throws {
        let rig = try NotifierRig()
        try rig.planner.user("tina", locale: "de")
        let nine = try rig.planner.reminder("tina", "noalc", "09:00")
        let six = try rig.planner.reminder("tina", "noalc", "18:00")
        let eight = try rig.planner.reminder("tina", "noalc", "20:00")
        try rig.planner.advance(to: "2026-11-16T20:00:00+01:00")
        let sent = try rig.notifications("tina", count: 3)
        #expect(sent.map { $0["reminderId"]?.stringValue } == [nine, six, eight])
        #expect(sent.map { $0["targetDay"]?.stringValue } == ["2026-11-15", "2026-11-16", "2026-11-16"])
        #expect(sent.map { $0["body"]?.stringValue } == ["Wie war gestern?", "Wie war heute?", "Wie war heute?"])
        #expect(sent.map { $0["deepLink"]?.stringValue } == ["lht://noalc?day=2026-11-15", "lht://noalc?day=2026-11-16", "lht://noalc?day=2026-11-16"])
    }

    @Test func quickActionLogsForTheTargetDayOnceAndOpenActionsReturnTheDeepLink() throws {
        let rig = try NotifierRig()
        try rig.planner.user("quinn", locale: "en")
        _ = try rig.planner.reminder("quinn", "noalc", "09:00")
        _ = try rig.planner.reminder("quinn", "workout", "18:00")
        try rig.planner.advance(to: "2026-11-16T18:00:00+01:00")
        let sent = try rig.notifications("quinn", count: 2)
        let noalc = sent[0]["notificationId"]!.stringValue!
        let workout = sent[1]["notificationId"]!.stringValue!

        let entry = try rig.client.ok("notification.action", ["notificationId": noalc, "actionId": "noalc.easy"])["entry"]!
        #expect(entry["userId"]?.stringValue == "quinn")
        #expect(entry["day"]?.stringValue == "2026-11-15")
        #expect(entry["level"]?.stringValue == "easy" && entry["drinks"]?.intValue == 4)
        #expect(entry["source"]?.stringValue == "notification")
        // The reply is the stored entry, exactly as noalc.list shows it.
        let listed = try rig.planner.loggerClient.ok("noalc.list", ["userId": "quinn", "from": "2026-11-14", "until": "2026-11-16"])["entries"]!
        #expect(listed.arrayValue == [entry])

        // Tapped again (or retried after a lost reply): the same entry, nothing logged twice.
        let again = try rig.client.ok("notification.action", ["notificationId": noalc.uppercased(), "actionId": "noalc.easy"])["entry"]!
        #expect(again == entry)
        let logged = try rig.planner.loggerClient.ok("events.since", ["limit": 1000])["events"]!.arrayValue
        #expect(logged.filter { $0["type"]?.stringValue == "noalc.logged" }.map { $0["data"]! } == [entry])

        #expect(try rig.client.ok("notification.action", ["notificationId": workout, "actionId": "open.workout"])
            == json(["deepLink": "lht://open/workout"]))
        #expect(try rig.client.failure("notification.action", ["notificationId": workout, "actionId": "noalc.easy"]) == ("not_found", "data.actionId"))
        #expect(try rig.client.failure("notification.action", ["notificationId": noalc, "actionId": "open.workout"]) == ("not_found", "data.actionId"))

        // Without the session logger nothing can be logged: unavailable, after the retries.
        rig.planner.logger.kill()
        #expect(try rig.client.failure("notification.action", ["notificationId": noalc, "actionId": "noalc.wild"]) == ("unavailable", nil))
    }

    @Test func rateLimitIsOnePerUserAndActivityPerHourBetweenOccurrenceInstants() throws {
        let rig = try NotifierRig()
        // A second notifier on the same planner, with the limit off.
        let unlimited = try ServiceProcess("notifier", arguments: rig.upstreamArguments + ["--rate-limit-minutes", "0"])
        let unlimitedClient = try WireClient(unlimited.api, context: rig.context)
        try rig.planner.user("rob")
        try rig.planner.user("sam")
        let robSix = try rig.planner.reminder("rob", "workout", "18:00")
        _ = try rig.planner.reminder("rob", "workout", "18:30")
        let robSeven = try rig.planner.reminder("rob", "workout", "19:00")
        let robMind = try rig.planner.reminder("rob", "mindfulness", "18:30")
        let samSix = try rig.planner.reminder("sam", "workout", "18:00")
        let samSeven = try rig.planner.reminder("sam", "workout", "19:00")

        // 30 minutes after a sent one: dropped and counted; another activity of the same user is not limited.
        try rig.planner.advance(to: "2026-11-16T18:30:00+01:00")
        try rig.settle(handled: 4)
        #expect(try rig.counter("rateLimited") == 1)
        #expect(try rig.notifications("rob", count: 2).compactMap { $0["reminderId"]?.stringValue } == [robSix, robMind])

        // Exactly 60 minutes after the last sent one: allowed. The dropped 18:30 did not restart the hour.
        try rig.planner.advance(to: "2026-11-16T19:00:00+01:00")
        try rig.settle(handled: 6)
        #expect(try rig.counter("rateLimited") == 1)
        #expect(try rig.notifications("rob", count: 3).compactMap { $0["reminderId"]?.stringValue } == [robSix, robMind, robSeven])
        #expect(try rig.notifications("sam", count: 2).compactMap { $0["reminderId"]?.stringValue } == [samSix, samSeven])

        // --rate-limit-minutes 0: everything goes out.
        #expect(try rig.notifications("rob", count: 4, client: unlimitedClient).count == 4)
        #expect(try unlimitedClient.ok("health")["counters"]?["rateLimited"]?.intValue == 0)
    }

    @Test func testNotificationsAlwaysGoOutAndDoNotStartTheHour() throws {
        let rig = try NotifierRig()
        try rig.planner.user("tess")
        let reminder = try rig.planner.reminder("tess", "workout", "18:00")
        try rig.planner.advance(to: "2026-11-16T17:50:00+01:00")
        _ = try rig.planner.plannerClient.ok("reminder.test", ["reminderId": reminder])
        try rig.planner.advance(to: "2026-11-16T18:00:00+01:00")
        _ = try rig.planner.plannerClient.ok("reminder.test", ["reminderId": reminder])
        let sent = try rig.notifications("tess", count: 3)
        #expect(sent.map { $0["test"]?.boolValue } == [true, false, true])
        #expect(sent.map { $0["scheduledFor"]?.stringValue } == ["2026-11-16T16:50:00Z", "2026-11-16T17:00:00Z", "2026-11-16T17:00:00Z"])
        #expect(try rig.counter("rateLimited") == 0)

        // A test notification's id is `<reminderId>@test-<the planner event's id>`.
        let dueIds = try rig.planner.plannerClient.ok("events.since", ["limit": 1000])["events"]!.arrayValue
            .filter { $0["type"]?.stringValue == "reminder.due" && $0["data"]?["test"]?.boolValue == true }
            .map { "\(reminder)@test-\($0["id"]!.stringValue!)" }
        #expect(dueIds.count == 2)
        #expect([sent[0], sent[2]].map { $0["notificationId"]?.stringValue } == dueIds)
        #expect(sent[1]["notificationId"]?.stringValue == "\(reminder)@2026-11-16T17:00:00Z")
    }

    @Test func aLateSubscriberGetsEverythingFromListAndEventsSince() throws {
        let rig = try NotifierRig()
        try rig.planner.user("lara")
        try rig.planner.user("leo")
        _ = try rig.planner.reminder("lara", "workout", "10:00")
        _ = try rig.planner.reminder("leo", "workout", "11:00")
        _ = try rig.planner.reminder("lara", "mindfulness", "12:00")
        // One day per step: a clock move decides at most one occurrence per reminder (see the report on clock.set).
        try rig.planner.advance(to: "2026-11-16T12:00:00+01:00")
        try rig.planner.advance(to: "2026-11-17T12:00:00+01:00")
        let lara = try rig.notifications("lara", count: 4)
        let leo = try rig.notifications("leo", count: 2)
        #expect(lara.count == 4 && leo.count == 2)

        // Nobody listened: events.since has every notify event, and its data is what the list shows.
        let stored = try rig.client.ok("events.since", [:])
        #expect(stored["lastSeq"]?.intValue == 6)
        let events = stored["events"]!.arrayValue
        #expect(events.compactMap { $0["seq"]?.intValue } == Array(1...6))
        #expect(events.map { $0["data"]! }.filter { $0["userId"]?.stringValue == "lara" } == lara)
        #expect(events.allSatisfy { $0["data"]?["seq"] == $0["seq"] && $0["topic"]?.stringValue?.hasPrefix("notify.") == true })
        // `after` pages by seq.
        let afterSecond = lara[1]["seq"]!.intValue!
        #expect(try rig.client.ok("notification.list", ["userId": "lara", "after": afterSecond])["notifications"]!.arrayValue == Array(lara[2...]))

        // Subscribed from now on: the next one arrives live, continuing the seq.
        let subscriber = try EventSubscriber(rig.notifier.events, context: rig.context, prefixes: ["notify.lara."])
        try rig.planner.advance(to: "2026-11-18T10:00:00+01:00")
        let live = try subscriber.receive(1)
        let listed = try rig.notifications("lara", count: 5)
        #expect(live.first?.topic == "notify.lara.workout")
        #expect(live.first?.envelope["seq"]?.intValue == 7)
        #expect(live.first?.envelope["data"] == listed.last)
    }

    @Test func badRequestsGetClearErrorsAndChangeNothing() throws {
        let rig = try NotifierRig()
        try rig.planner.user("bea")
        _ = try rig.planner.reminder("bea", "noalc", "09:00")
        try rig.planner.advance(to: "2026-11-16T09:00:00+01:00")
        let before = try rig.notifications("bea", count: 1)
        let id = before[0]["notificationId"]!.stringValue!
        let client = rig.client

        #expect(try client.failure("notification.list", ["userId": "bea.x"]) == ("invalid_argument", "data.userId"))
        #expect(try client.failure("notification.list", [:]) == ("invalid_argument", "data.userId"))
        #expect(try client.failure("notification.list", ["userId": "bea", "after": -1]) == ("invalid_argument", "data.after"))
        #expect(try client.failure("notification.list", ["userId": "bea", "after": "1"]) == ("invalid_argument", "data.after"))
        #expect(try client.failure("notification.action", ["actionId": "noalc.easy"]) == ("invalid_argument", "data.notificationId"))
        #expect(try client.failure("notification.action", ["notificationId": "", "actionId": "noalc.easy"]) == ("invalid_argument", "data.notificationId"))
        #expect(try client.failure("notification.action", ["notificationId": String(repeating: "x", count: 201), "actionId": "noalc.easy"])
            == ("invalid_argument", "data.notificationId"))
        #expect(try client.failure("notification.action", ["notificationId": id, "actionId": 3]) == ("invalid_argument", "data.actionId"))
        #expect(try client.failure("notification.action", ["notificationId": id]) == ("invalid_argument", "data.actionId"))
        #expect(try client.failure("notification.action", ["notificationId": "3f2b8c1e-0000-4000-8000-000000000000@2026-11-16T08:00:00Z",
                                                           "actionId": "noalc.easy"]) == ("not_found", "data.notificationId"))
        #expect(try client.failure("notification.action", ["notificationId": id, "actionId": "noalc.sober"]) == ("not_found", "data.actionId"))
        #expect(try client.failure("notification.action", ["notificationId": id, "actionId": "open.meditation"]) == ("not_found", "data.actionId"))
        #expect(try client.failure("notification.send", ["userId": "bea"]) == ("unknown_op", "op"))

        // Nothing was published or logged, and the list is as it was.
        #expect(try client.ok("health")["lastSeq"]?.intValue == 1)
        #expect(try rig.planner.loggerClient.ok("events.since", [:])["lastSeq"]?.intValue == 0)
        #expect(try rig.notifications("bea", count: 1) == before)
    }

    @Test func unusableFlagsExitWithStatus2() throws {
        for arguments in [["--rate-limit-minutes", "-1"], ["--rate-limit-minutes=abc"], ["--rate-limit-minutes", "10081"],
                          ["--planner-api", "localhost:7311"], ["--session-logger-api", "tcp://127.0.0.1:0"]] {
            let (status, error) = try runNotifier(arguments + ["--data-dir", temporaryDirectory().path])
            #expect(status == 2, "\(arguments)")
            #expect(error.split(separator: "\n").count == 1 && error.hasPrefix("error: "), "\(arguments): \(error)")
        }
        let (status, error) = try runNotifier(["--data-dir", temporaryDirectory().path],
                                              environment: ["LHT_RATE_LIMIT_MINUTES": "-5"])
        #expect(status == 2)
        #expect(error.contains("rate-limit-minutes"))
    }
}

/// Runs the notifier executable to its exit; returns the status and standard error.
private func runNotifier(_ arguments: [String], environment extra: [String: String] = [:]) throws -> (Int32, String) {
    let run = try CapturedProcess(BuildProducts.executable("notifier").path, arguments,
                                  environment: ProcessInfo.processInfo.environment.merging(extra) { $1 }).finish()
    return (run.status, run.stderr)
}

/// A JSON literal as the wire decodes it.
private func json(_ object: Any) -> JSONValue {
    try! JSONDecoder().decode(JSONValue.self, from: JSONSerialization.data(withJSONObject: object))
}

/// `value` without the given keys (stamps and seqs a test cannot know in advance).
private func without(_ value: JSONValue, _ keys: String...) -> JSONValue {
    guard case .object(var object) = value else { return value }
    for key in keys { object[key] = nil }
    return .object(object)
}
