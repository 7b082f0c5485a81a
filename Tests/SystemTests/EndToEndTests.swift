import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// The first walkthrough a new user follows, typed through the built `lht` against the four real executables, and the
/// Python example client against the same system.
@Suite struct EndToEndTests {
    /// Monday 2026-11-16 08:00 in Berlin: in the past, so sessions on that day pass the logger's "not in the future" check.
    static let monday = "2026-11-16T08:00:00+01:00"

    @Test func aCoveredReminderIsCancelledWithTheSessionAsTheReason() throws {
        let system = try LHTSystem(services: [.planner])
        try system.expectOK(["user", "set", "--zone", "Europe/Berlin", "--locale", "en", "--user", "henning"],
                            output: "user henning: time zone Europe/Berlin, locale en, not paused")
        let mindfulness = try system.addReminder(["mindfulness", "--time", "18:00"], user: "henning")
        let workout = try system.addReminder(["workout", "--time", "12:00", "--days", "mon,wed", "--lookback", "1"], user: "henning")

        let logged = try system.lht(["session", "log", "mindfulness", "--start", "2026-11-16T10:00:00+01:00",
                                     "--end", "2026-11-16T10:15:00+01:00", "--user", "henning"])
        #expect(logged.status == 0)
        let session = try #require(firstMatch(#"logged mindfulness session ([0-9a-f-]{36}) \(15 min"#, in: logged.stdout))

        // The planner hears of the session through the logger's events: ask until it shows.
        let upcoming = try system.eventually(["reminder", "upcoming", "--days", "2", "--user", "henning"]) {
            $0.contains("2026-11-16  mon      18:00  mindfulness  cancelled  \(session)")
        }
        #expect(upcoming.stdout.hasPrefix("day         weekday  time   activity     status     why\n"))
        #expect(upcoming.stdout.contains("2026-11-16  mon      12:00  workout      scheduled\n"))
        #expect(upcoming.stdout.contains("2026-11-17  tue      18:00  mindfulness  scheduled\n"))
        #expect(!upcoming.stdout.contains("2026-11-17  tue      12:00"))  // mon,wed only

        // --json is the reply's data, one line.
        let json = try system.lht(["reminder", "upcoming", "--days", "1", "--user", "henning", "--json"])
        let occurrences = try JSONDecoder().decode(JSONValue.self, from: Data(json.stdout.utf8))["occurrences"]?.arrayValue ?? []
        #expect(json.stdout.filter { $0 == "\n" }.count == 1)
        #expect(occurrences.map { $0["status"]?.stringValue } == ["scheduled", "cancelled"])
        #expect(occurrences.last?["cause"]?.stringValue == session)

        // The user keeps the covered occurrence after all: restored, and upcoming says why it is scheduled.
        let restored = try system.lht(["reminder", "restore", "\(mindfulness)@2026-11-16T17:00:00Z"])
        #expect(restored.stdout == "restored: mindfulness on mon 2026-11-16 at 18:00 will fire (\(mindfulness)@2026-11-16T17:00:00Z)\n")
        let after = try system.lht(["reminder", "upcoming", "--days", "1", "--user", "henning", "--ids"])
        #expect(after.stdout.contains("2026-11-16  mon      18:00  mindfulness  scheduled  restored  \(mindfulness)@2026-11-16T17:00:00Z"))

        // Edit keeps what is not given; list shows it.
        try system.expectOK(["reminder", "edit", workout, "--time", "12:30"],
                            output: "changed reminder \(workout): workout at 12:30 on mon,wed, look-back 1 h")
        let list = try system.lht(["reminder", "list", "--user", "henning"])
        #expect(list.stdout.contains("\(workout)  workout      12:30  mon,wed  1 h        yes"))
    }

    @Test func noalcLogDefaultsByTheSixPmRuleInTheUsersZone() throws {
        let system = try LHTSystem(services: [.planner])
        _ = try system.lht(["user", "set", "--zone", "America/New_York", "--user", "nora"])
        // 17:59 in New York is about yesterday, 18:00 about today; --now stands in for the wall clock.
        try system.expectOK(["noalc", "log", "easy", "--user", "nora", "--now", "2026-11-16T22:59:00Z"],
                            matching: #"^logged NoAlc easy for 2026-11-15 \([0-9a-f-]{36}, seq \d+\)\n$"#)
        try system.expectOK(["noalc", "log", "steady", "--user", "nora", "--now", "2026-11-16T23:00:00Z"],
                            matching: #"^logged NoAlc steady for 2026-11-16 "#)
        try system.expectOK(["noalc", "log", "wild", "--user", "nora", "--day", "2026-11-01"], matching: #"for 2026-11-01 "#)
        let entries = try system.loggerClient.ok("noalc.list", ["userId": "nora", "from": "2026-11-01", "until": "2026-11-30"])
        #expect(entries["entries"]?.arrayValue.map { $0["day"]?.stringValue ?? "" } == ["2026-11-01", "2026-11-15", "2026-11-16"])

        // The same --id again is acknowledged as a duplicate.
        let id = "3f2b8c1e-0000-4000-8000-000000000001"
        _ = try system.lht(["noalc", "log", "steady", "--day", "2026-11-02", "--id", id, "--user", "nora"])
        try system.expectOK(["noalc", "log", "steady", "--day", "2026-11-02", "--id", id, "--user", "nora"],
                            matching: "^already logged NoAlc steady for 2026-11-02 \\(\(id)")
    }

    @Test func exitStatusesScriptsCanRelyOn() throws {
        let system = try LHTSystem(services: [.planner])
        // 1: the service's error, one line with code and field.
        let missing = try system.lht(["reminder", "delete", "00000000-0000-4000-8000-000000000000"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "error: not_found (data.id): no reminder 00000000-0000-4000-8000-000000000000\n")
        let backwards = try system.lht(["session", "log", "workout", "--start", "2026-11-16T10:00:00Z", "--end", "2026-11-16T09:00:00Z",
                                         "--user", "henning"])
        #expect(backwards.status == 1)
        #expect(backwards.stderr == "error: invalid_argument (data.end): end must not be before start\n")
        let zone = try system.lht(["user", "set", "--zone", "Mars/Olympus", "--user", "henning"])
        #expect(zone.status == 1)
        #expect(zone.stderr.hasPrefix("error: invalid_argument (data.timeZone): "))
        // 2: usage, before anything is sent.
        #expect(try system.lht(["session", "log", "mindfulness", "--minutes", "10"]).status == 2)  // no user
        #expect(try system.lht(["session", "log", "mindfulness", "--minutes", "10", "--start", "2026-11-16T10:00:00Z", "--user", "u"]).status == 2)
        #expect(try system.lht(["noalc", "log", "steady", "--day", "yesterday", "--user", "u"]).status == 2)
        #expect(try system.lht(["reminder", "frobnicate"]).status == 2)
        // --help is success, and documents the statuses.
        let help = try system.lht(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("3  the service did not answer within --timeout"))
    }

    @Test func aServiceThatIsNotRunningFailsWithinTheTimeout() throws {
        let nowhere = "tcp://127.0.0.1:1"
        let list = try runLHT(["reminder", "list", "--user", "henning", "--planner", nowhere, "--timeout", "1"])
        #expect(list.status == 3)
        #expect(list.stderr == "error: reminder-planner did not answer reminder.list at \(nowhere) within 1 s (is it running?)\n")
        #expect(list.seconds < 4)

        // health asks all four at once: one timeout, not four.
        let health = try runLHT(["health", "--timeout", "1", "--session-logger", nowhere] + ServiceKind.allCases.flatMap { ["--\($0.lhtFlag)", nowhere] })
        #expect(health.status == 3)
        #expect(health.stderr.split(separator: "\n").count == 4)
        #expect(health.seconds < 4)

        let subscribe = try runLHT(["subscribe", "notify.henning.", "--events", nowhere, "--count", "1", "--max-wait", "1"])
        #expect(subscribe.status == 3)
        #expect(subscribe.seconds < 4)
    }

    @Test
    func walkthroughFromReminderToNotificationActionAndStreak() throws {
        let system = try LHTSystem(services: [.planner, .notifier, .streak])
        _ = try system.lht(["user", "set", "--zone", "Europe/Berlin", "--locale", "en", "--user", "henning"])
        _ = try system.addReminder(["mindfulness", "--time", "18:00"], user: "henning")
        let noalc = try system.addReminder(["noalc", "--time", "09:00"], user: "henning")
        _ = try system.addReminder(["workout", "--time", "12:00", "--lookback", "1"], user: "henning")
        let logged = try system.lht(["session", "log", "mindfulness", "--start", "2026-11-16T10:00:00+01:00",
                                     "--end", "2026-11-16T10:15:00+01:00", "--user", "henning"])
        let session = try #require(firstMatch(#"session ([0-9a-f-]{36})"#, in: logged.stdout))
        _ = try system.eventually(["reminder", "upcoming", "--days", "1", "--user", "henning"]) {
            $0.contains("18:00  mindfulness  cancelled  \(session)")
        }

        // 09:00: the NoAlc check-in (about Sunday, nothing logged) is not covered and reaches the subscriber.
        let subscriber = try system.startSubscribe(["--user", "henning", "--count", "1", "--max-wait", "20"])
        try system.setClock("2026-11-16T09:30:00+01:00")
        let received = try subscriber.finish()
        #expect(received.status == 0)
        let line = try JSONDecoder().decode(JSONValue.self, from: Data(received.stdout.utf8))
        #expect(line["topic"]?.stringValue == "notify.henning.noalc")
        let notification = try #require(line["event"]?["data"])
        #expect(notification["notificationId"]?.stringValue == "\(noalc)@2026-11-16T08:00:00Z")
        #expect(notification["title"]?.stringValue == "NoAlc check-in")
        #expect(notification["targetDay"]?.stringValue == "2026-11-15")
        #expect(notification["actions"]?.arrayValue.compactMap { $0["id"]?.stringValue } == ["noalc.steady", "noalc.easy", "noalc.wild"])

        // Answering it from the terminal logs Sunday's level.
        try system.expectOK(["action", "\(noalc)@2026-11-16T08:00:00Z", "noalc.steady"],
                            matching: #"^logged NoAlc steady for 2026-11-15 \([0-9a-f-]{36}\)\n$"#)

        // 12:00: the workout reminder, readable with --pretty.
        let pretty = try system.startSubscribe(["notify.henning.workout", "--pretty", "--count", "1", "--max-wait", "20"])
        try system.setClock("2026-11-16T12:30:00+01:00")
        let workout = try pretty.finish()
        #expect(workout.status == 0)
        #expect(workout.stdout.contains("notify.henning.workout"))
        #expect(workout.stdout.contains("\"Time for your workout\" Time for your daily workout! 💪  [open.workout]"))

        // 18:00 passes: the meditation reminder was covered, so it is suppressed, not sent.
        try system.setClock("2026-11-16T18:30:00+01:00")
        let upcoming = try system.lht(["reminder", "upcoming", "--days", "1", "--user", "henning"])
        #expect(upcoming.stdout.contains("2026-11-16  mon      09:00  noalc        fired       asks about 2026-11-15\n"))
        #expect(upcoming.stdout.contains("2026-11-16  mon      18:00  mindfulness  suppressed  \(session)\n"))
        let sent = try system.eventually(["notifications", "--user", "henning"]) { $0.split(separator: "\n").count == 3 }
        #expect(sent.stdout.range(of: "noalc +NoAlc check-in", options: .regularExpression) != nil)
        #expect(!sent.stdout.contains("mindfulness"))

        // The streak service followed the action's entry.
        let streak = try system.eventually(["streak", "--as-of", "2026-11-15", "--user", "henning"]) { $0.hasPrefix("streak       1 day") }
        #expect(streak.stdout == """
            streak       1 day (as of 2026-11-15)
            jokers       0 on hand (earned 0, used 0, lost 0)
            last logged  2026-11-15, today logged
            policy       seed

            """)

        // The month: Sunday steady, Monday's meditation; and the picture with SEMANTICS §6's marks.
        let svg = temporaryDirectory("lht-svg").appendingPathComponent("november.svg")
        let calendar = try system.lht(["calendar", "--month", "2026-11", "--no-color", "--svg", svg.path, "--user", "henning"])
        #expect(calendar.status == 0)
        #expect(calendar.stdout.hasPrefix("November 2026 · henning\n Mo    Tu    We    Th    Fr    Sa    Su\n"))
        #expect(calendar.stdout.contains(" 9.   10.   11.   12.   13.   14.   15S\n16. m 17."))
        let picture = try String(contentsOf: svg, encoding: .utf8)
        #expect(picture.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
        #expect(picture.components(separatedBy: "<g id=\"day-").count - 1 == 30)
        #expect(picture.contains("<g id=\"day-2026-11-15\"><circle class=\"noalc steady\" cx=\"384\" cy=\"216\" r=\"14\" fill=\"#0EBF6E\">"))
        #expect(picture.contains("<g id=\"day-2026-11-16\"><circle class=\"mindfulness\" cx=\"48\" cy=\"272\" r=\"20\" fill=\"none\" stroke=\"#7A6FF0\" stroke-width=\"2\">"))
        #expect(picture.components(separatedBy: "class=\"workout\"").count - 1 == 0)
    }

    /// deploy/clients/python_client.py, knowing nothing but PROTOCOL.md, against services started with
    /// keys: CurveZMQ with the certificate `lht keys add-user py` wrote (pyzmq's zmq.auth) for an acked
    /// session, a NoAlc check-in through the intake, and a notification (a test firing) on the notifier's events.
    @Test func pythonClientSpeaksCurveWithAUserCertificate() throws {
        guard (try? runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import zmq"]).status) == 0 else {
            Issue.record("pyzmq is missing: `python3 -m pip install pyzmq` (deploy/install-prerequisites --python does it)")
            return
        }
        let system = try LHTSystem(services: [.planner, .notifier, .streak], keys: true)
        let py = try system.addUser("py")
        let reminder = try system.addReminder(["mindfulness", "--time", "07:00"], user: "py")
        let notifier = system.services[.notifier]!
        let python = try userProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "python3", repositoryRoot.appendingPathComponent("deploy/clients/python_client.py").path, "--user", "py",
            "--api", system.logger.api, "--intake", system.logger.endpoints["intake"]!, "--notifier-events", notifier.events,
            "--start", "2026-11-16T07:00:00+01:00", "--minutes", "20", "--noalc-day", "2026-11-15", "--wait", "20",
            "--cert", py.secret.path, "--server-keys", system.keys!.path,
        ])
        try python.waitForOutput("subscribed to notify.py.")
        _ = try system.lht(["reminder", "test", reminder])
        let result = try python.finish()
        #expect(result.status == 0, "python client: \(result.stderr)")
        #expect(result.stdout.contains("session.log ack: {\"duplicate\": false, \"id\": "))
        #expect(result.stdout.contains("noalc.log sent to intake: steady for 2026-11-15"))
        #expect(result.stdout.contains("notification \(reminder)@test-"))
        #expect(result.stdout.contains(": Time to meditate / Take a moment to breathe 🌿 (actions: open.meditation)"))
        // Both records reached the session logger: the calendar's summary shows them.
        _ = try system.eventually(["calendar", "--month", "2026-11", "--no-color", "--user", "py"]) { $0.contains("15S\n16. m") }
    }
}
