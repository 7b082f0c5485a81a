import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// The real `noalc-streak` executable following a real `session-logger`, over real sockets.
@Suite struct NoAlcStreakSystemTests {
    let context: Context
    let logger: ServiceProcess
    let streak: ServiceProcess
    /// The session logger's api, where entries are logged.
    let log: WireClient
    /// The streak service's api.
    let client: WireClient

    init() throws {
        context = try Context()
        logger = try ServiceProcess("session-logger")
        streak = try startStreak(following: logger)
        log = try WireClient(logger.api, context: context)
        client = try WireClient(streak.api, context: context)
    }

    func logLevels(_ user: String, _ days: [String], _ level: String) throws {
        for day in days { _ = try log.ok("noalc.log", ["userId": user, "day": day, "level": level]) }
    }

    /// `streak.get` once the feed has caught up far enough for `condition`; delivery is asynchronous.
    func stateWhen(_ data: [String: Any], on client: WireClient? = nil, _ condition: (JSONValue) -> Bool) throws -> JSONValue {
        var state = JSONValue.null
        _ = try eventually { state = try (client ?? self.client).ok("streak.get", data); return condition(state) }
        return state
    }

    @Test func loggedEntriesAndACorrectionChangeTheStreakAndPublishUpdates() throws {
        let subscriber = try EventSubscriber(streak.events, context: context, prefixes: ["streak.updated.anna."])
        let week = days(from: "2026-03-01", count: 7)
        try logLevels("anna", week, "steady")
        let state = try stateWhen(["userId": "anna", "asOf": week[6]]) { $0["streakDays"]?.intValue == 7 }
        #expect(state == streakState("anna", asOf: week[6], policy: "seed", streak: 7, earned: 1, used: 0, lost: 0, available: 1,
                                     lastLogged: week[6], todayLogged: true))

        // One event per change, each computed as of the latest logged day; the last is what streak.get says.
        let events = try subscriber.receive(7)
        #expect(events.map(\.topic) == Array(repeating: "streak.updated.anna.noalc", count: 7))
        #expect(events.map { $0.envelope["data"]?["streakDays"]?.intValue } == Array(1...7))
        #expect(events.map { $0.envelope["seq"]?.intValue } == Array(1...7))
        #expect(events.last?.envelope["data"] == state)
        #expect(events.last?.envelope["source"]?.stringValue == "noalc-streak")

        // A correction of a past day (a new entry, latest wins): steady, steady, easy without a joker, 4 × steady.
        _ = try log.ok("noalc.log", ["userId": "anna", "day": week[2], "level": "easy"])
        let corrected = try stateWhen(["userId": "anna", "asOf": week[6]]) { $0["streakDays"]?.intValue == 4 }
        #expect(corrected["rewardsEarned"]?.intValue == 0)
        #expect(corrected["rewardsAvailable"]?.intValue == 0)
        let update = try subscriber.receive(1)
        #expect(update.first?.envelope["seq"]?.intValue == 8)
        #expect(update.first?.envelope["data"] == corrected)

        // The same level again changes nothing, so nothing is published; bert's entry shows the feed got past it.
        _ = try log.ok("noalc.log", ["userId": "anna", "day": week[2], "level": "easy"])
        _ = try log.ok("noalc.log", ["userId": "bert", "day": week[0], "level": "steady"])
        _ = try stateWhen(["userId": "bert", "asOf": week[0]]) { $0["streakDays"]?.intValue == 1 }
        #expect(try subscriber.receive(1, timeout: 0.3).isEmpty)
        #expect(try client.ok("events.since", [:])["lastSeq"]?.intValue == 9)
    }

    @Test func asOfIgnoresLaterEntriesAndAnUnloggedTodayNeverHurts() throws {
        let week = days(from: "2026-03-01", count: 7)
        try logLevels("carl", week, "steady")
        _ = try log.ok("noalc.log", ["userId": "carl", "day": "2026-03-20", "level": "wild"])
        _ = try stateWhen(["userId": "carl", "asOf": "2026-03-20"]) { $0["lastLoggedDay"]?.stringValue == "2026-03-20" }

        // Seven steady days: streak 7 and one joker.
        #expect(try client.ok("streak.get", ["userId": "carl", "asOf": week[6]])
            == streakState("carl", asOf: week[6], policy: "seed", streak: 7, earned: 1, used: 0, lost: 0, available: 1,
                           lastLogged: week[6], todayLogged: true))
        // Entries after asOf are ignored.
        #expect(try client.ok("streak.get", ["userId": "carl", "asOf": week[1]])
            == streakState("carl", asOf: week[1], policy: "seed", streak: 2, earned: 0, used: 0, lost: 0, available: 0,
                           lastLogged: week[1], todayLogged: true))
        // Today (03-08) unlogged: the walk ends yesterday, the streak stands.
        #expect(try client.ok("streak.get", ["userId": "carl", "asOf": "2026-03-08"])
            == streakState("carl", asOf: "2026-03-08", policy: "seed", streak: 7, earned: 1, used: 0, lost: 0, available: 1,
                           lastLogged: week[6], todayLogged: false))
        // 03-08 missed and today (03-09) unlogged: the joker heals the missed day.
        #expect(try client.ok("streak.get", ["userId": "carl", "asOf": "2026-03-09"])
            == streakState("carl", asOf: "2026-03-09", policy: "seed", streak: 8, earned: 1, used: 1, lost: 0, available: 0,
                           lastLogged: week[6], todayLogged: false))
        // Without asOf: today in the service's zone (UTC by default), by the wall clock.
        let before = LocalDay(ordinal: Int(Instant.now().secondsSince1970 / 86_400)).description
        let now = try client.ok("streak.get", ["userId": "carl"])
        let after = LocalDay(ordinal: Int(Instant.now().secondsSince1970 / 86_400)).description
        #expect([before, after].contains(now["asOf"]?.stringValue ?? ""))
        // A user who never logged anything has the empty state, not not_found.
        #expect(try client.ok("streak.get", ["userId": "nobody", "asOf": week[0]])
            == streakState("nobody", asOf: week[0], policy: "seed", streak: 0, earned: 0, used: 0, lost: 0, available: 0,
                           lastLogged: nil, todayLogged: false))
    }

    @Test func policiesDifferOnAWildDay() throws {
        let classic = try startStreak(following: logger, ["--policy", "classic"])
        let classicClient = try WireClient(classic.api, context: context)
        // SEMANTICS §5: "7…1 steady, 0 wild" is seed 0, classic 8, both without a joker left.
        let week = days(from: "2026-04-01", count: 8)
        try logLevels("dora", Array(week.prefix(7)), "steady")
        try logLevels("dora", [week[7]], "wild")
        let request: [String: Any] = ["userId": "dora", "asOf": week[7]]
        let seed = try stateWhen(request) { $0["lastLoggedDay"]?.stringValue == week[7] }
        let classical = try stateWhen(request, on: classicClient) { $0["lastLoggedDay"]?.stringValue == week[7] }
        #expect(seed == streakState("dora", asOf: week[7], policy: "seed", streak: 0, earned: 1, used: 0, lost: 1, available: 0,
                                    lastLogged: week[7], todayLogged: true))
        #expect(classical == streakState("dora", asOf: week[7], policy: "classic", streak: 8, earned: 1, used: 1, lost: 0, available: 0,
                                         lastLogged: week[7], todayLogged: true))
        #expect(classic.stop() == 0)
    }

    @Test func calendarColoursEveryDayOfTheMonth() throws {
        _ = try log.ok("noalc.log", ["userId": "emil", "day": "2026-01-31", "level": "steady"])
        _ = try log.ok("noalc.log", ["userId": "emil", "day": "2026-02-01", "level": "steady"])
        _ = try log.ok("noalc.log", ["userId": "emil", "day": "2026-02-14", "level": "wild"])
        _ = try log.ok("noalc.log", ["userId": "emil", "day": "2026-02-14", "level": "easy"])
        _ = try log.ok("noalc.log", ["userId": "emil", "day": "2026-02-28", "level": "wild"])
        _ = try log.ok("noalc.log", ["userId": "emil", "day": "2026-03-01", "level": "steady"])
        _ = try stateWhen(["userId": "emil", "asOf": "2026-03-01"]) { $0["lastLoggedDay"]?.stringValue == "2026-03-01" }

        let month = try client.ok("calendar.get", ["userId": "emil", "month": "2026-02"])["days"]!.arrayValue
        #expect(month.map { $0["day"]?.stringValue } == days(from: "2026-02-01", count: 28))
        func day(_ text: String, _ level: String?, _ color: String?) -> JSONValue {
            .object(["day": .string(text), "level": level.map(JSONValue.string) ?? .null, "color": color.map(JSONValue.string) ?? .null])
        }
        #expect(month[0] == day("2026-02-01", "steady", "#0EBF6E"))
        #expect(month[1] == day("2026-02-02", nil, nil))
        #expect(month[13] == day("2026-02-14", "easy", "#89D6B2"))
        #expect(month[27] == day("2026-02-28", "wild", "#B6B6B6"))
        #expect(month.filter { $0["level"] != .null }.count == 3)
        // A leap February of a user who never logged: every day, all null.
        let leap = try client.ok("calendar.get", ["userId": "nobody", "month": "2028-02"])["days"]!.arrayValue
        #expect(leap.count == 29)
        #expect(leap.allSatisfy { $0["level"] == .null && $0["color"] == .null })
    }

    @Test(arguments: [
        ("streak.get", [:], "data.userId"),
        ("streak.get", ["userId": "a.b"], "data.userId"),
        ("streak.get", ["userId": 7], "data.userId"),
        ("streak.get", ["userId": "anna", "asOf": "2026-02-30"], "data.asOf"),
        ("streak.get", ["userId": "anna", "asOf": "today"], "data.asOf"),
        ("calendar.get", ["userId": "anna"], "data.month"),
        ("calendar.get", ["userId": "anna", "month": "2026-13"], "data.month"),
        ("calendar.get", ["userId": "anna", "month": "2026-1"], "data.month"),
        ("calendar.get", ["userId": "anna", "month": "2026-03-01"], "data.month"),
        ("calendar.get", ["userId": "anna", "month": 202603], "data.month"),
        ("calendar.get", ["userId": "", "month": "2026-03"], "data.userId"),
        ("events.since", ["limit": 0], "data.limit"),
    ] as [(String, [String: any Sendable], String)])
    func invalidRequestsNameTheFieldAndChangeNothing(op: String, data: [String: any Sendable], field: String) throws {
        try logLevels("anna", days(from: "2026-03-01", count: 3), "steady")
        _ = try stateWhen(["userId": "anna", "asOf": "2026-03-03"]) { $0["streakDays"]?.intValue == 3 }
        let before = try client.ok("events.since", [:])
        let failure = try client.failure(op, data)
        #expect(failure.code == "invalid_argument")
        #expect(failure.field == field)
        #expect(try client.failure("noalc.log", ["userId": "anna", "day": "2026-03-04", "level": "steady"]) == ("unknown_op", "op"))
        #expect(try client.ok("events.since", [:]) == before)
        #expect(try client.ok("streak.get", ["userId": "anna", "asOf": "2026-03-04"])["streakDays"]?.intValue == 3)
    }

    @Test func healthNamesTheServiceAndSigtermExitsZero() throws {
        let health = try client.ok("health")
        #expect(health["service"]?.stringValue == "noalc-streak")
        #expect(health["lastSeq"]?.intValue == 0)
        #expect(streak.stop() == 0)
    }
}

/// Start-up, crash and flag behaviour: each test owns its processes' lifecycles.
@Suite struct NoAlcStreakLifecycleTests {
    @Test func entriesLoggedBeforeStartAreCaughtUpBeforeReady() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        // Six events.since pages (1000 each): more than the catch-up's reader keeps waiting (4), so
        // it has to wait for the applying side as well as page.
        var requests: [[String: Any]] = []
        for user in 0..<12 {
            for (index, day) in days(from: "2025-01-01", count: 500).enumerated() {
                requests.append(["userId": "early\(user)", "day": day, "level": index == 50 && user % 2 == 0 ? "wild" : "steady"])
            }
        }
        try pipeline(logger.api, context: context, "noalc.log", requests)

        let streak = try startStreak(following: logger)
        let client = try WireClient(streak.api, context: context)
        // No waiting: the ready line comes only after the catch-up.
        #expect(try client.ok("streak.get", ["userId": "early1", "asOf": "2026-05-15"])["streakDays"]?.intValue == 500)
        // The last user's entries are the last page.
        #expect(try client.ok("streak.get", ["userId": "early11", "asOf": "2026-05-15"])["streakDays"]?.intValue == 500)
        let broken = try client.ok("streak.get", ["userId": "early0", "asOf": "2026-05-15"])
        #expect(broken["streakDays"]?.intValue == 449)
        #expect(broken["rewardsLost"]?.intValue == 1)
        // One streak.updated per entry here: every entry changes its user's state.
        #expect(try client.ok("health")["lastSeq"]?.intValue == 6000)
    }

    @Test func sigkillLosesNothingAndAppliesNothingTwice() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        let streak = try startStreak(following: logger)
        let client = try WireClient(streak.api, context: context)

        // Random days of a quarter, so most entries correct a day logged before; the streak is killed
        // while the session logger is still taking the pipelined requests.
        var random = SplitMix64(seed: 0x57_2EA4)
        func entries(_ count: Int) -> [[String: Any]] {
            (0..<count).map { _ in
                let roll = random.next() % 20
                return ["userId": "crash\(random.next() % 20)", "day": LocalDay("2026-01-01")!.adding(days: Int(random.next() % 90)).description,
                        "level": roll == 0 ? "wild" : roll == 1 ? "easy" : "steady"]
            }
        }
        let inFlight = try Pipeline(logger.api, context: context, "noalc.log", entries(3000))
        _ = try eventually { try client.ok("health")["lastSeq"]!.intValue! > 0 }
        streak.kill()
        try inFlight.finish()
        // Logged while the streak is down: it must catch these up at restart.
        try pipeline(logger.api, context: context, "noalc.log", entries(500))
        try streak.restart()
        let restartedClient = try WireClient(streak.api, context: context)

        // A fresh service on an empty data dir computes everything once, from the same log.
        let fresh = try startStreak(following: logger)
        let freshClient = try WireClient(fresh.api, context: context)
        for user in 0..<20 {
            for asOf in ["2026-02-01", "2026-04-01"] {
                let request: [String: Any] = ["userId": "crash\(user)", "asOf": asOf]
                #expect(try restartedClient.ok("streak.get", request) == freshClient.ok("streak.get", request), "crash\(user) as of \(asOf)")
            }
            let month: [String: Any] = ["userId": "crash\(user)", "month": "2026-02"]
            #expect(try restartedClient.ok("calendar.get", month) == freshClient.ok("calendar.get", month), "crash\(user)")
        }
        // Same state changes in the same order: the outboxes match event for event, seqs without gaps.
        let restartedEvents = try allEvents(restartedClient)
        let freshEvents = try allEvents(freshClient)
        #expect(restartedEvents.map { $0["seq"]?.intValue } == (1...Int64(restartedEvents.count)).map { $0 })
        #expect(restartedEvents.count == freshEvents.count)
        #expect(restartedEvents.map { [$0["topic"], $0["data"]] } == freshEvents.map { [$0["topic"], $0["data"]] })
    }

    @Test func startsWithoutTheSessionLoggerAndCatchesUpWhenItAnswers() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        try pipeline(logger.api, context: context, "noalc.log", days(from: "2026-05-01", count: 3).map {
            ["userId": "late", "day": $0, "level": "steady"]
        })
        let (api, events) = (logger.api, logger.events)
        #expect(logger.stop() == 0)

        let started = Date()
        let streak = try startStreak(following: logger)
        #expect(Date().timeIntervalSince(started) >= 1.5, "ready only after the 2 s catch-up timeout")
        let client = try WireClient(streak.api, context: context)
        #expect(try client.ok("streak.get", ["userId": "late", "asOf": "2026-05-03"])["streakDays"]?.intValue == 0)

        // The same endpoints again: the streak keeps retrying and catches up.
        let revived = try ServiceProcess("session-logger", dataDirectory: logger.dataDirectory, arguments: ["--api", api, "--events", events])
        var state = JSONValue.null
        _ = try eventually(10) {
            state = try client.ok("streak.get", ["userId": "late", "asOf": "2026-05-03"])
            return state["streakDays"]?.intValue == 3
        }
        #expect(state["streakDays"]?.intValue == 3)
        #expect(revived.stop() == 0)
    }

    @Test func unusableFlagsExitTwoBeforeAnythingIsCreated() throws {
        for arguments in [["--policy", "nope"], ["--time-zone", "Mars/Olympus"], ["--policy=classic", "--time-zone=Mars/Olympus"],
                          ["--session-logger-api", "http://nope"], ["--session-logger-events", "tcp://127.0.0.1:notaport"]] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("streak-flags-\(UUID().uuidString.prefix(8))")
            let run = try CapturedProcess(BuildProducts.executable("noalc-streak").path,
                                          arguments + ["--data-dir", directory.path, "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*"]).finish()
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: directory.path), "\(arguments)")
        }
    }
}

// MARK: Helpers

/// A `noalc-streak` following `logger`.
private func startStreak(following logger: ServiceProcess, _ arguments: [String] = []) throws -> ServiceProcess {
    try ServiceProcess("noalc-streak", arguments: ["--session-logger-api", logger.api, "--session-logger-events", logger.events] + arguments)
}

/// `count` consecutive days from `first`, as `YYYY-MM-DD`.
private func days(from first: String, count: Int) -> [String] {
    (0..<count).map { LocalDay(first)!.adding(days: $0).description }
}

/// Polls until `condition` holds or `timeout` passes; true if it held.
@discardableResult
private func eventually(_ timeout: TimeInterval = 5, _ condition: () throws -> Bool) throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() > deadline { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
}

/// Requests sent before any reply is read, as a busy client sends them; `finish` expects every one to succeed.
private struct Pipeline {
    let socket: Socket
    let op: String
    let count: Int

    init(_ endpoint: String, context: Context, _ op: String, _ requests: [[String: Any]]) throws {
        socket = try Socket(context, .dealer)
        try socket.connect(endpoint)
        for data in requests {
            try socket.send(multipart: [Data(), JSONSerialization.data(withJSONObject: ["v": 1, "op": op, "data": data])])
        }
        self.op = op
        count = requests.count
    }

    func finish() throws {
        try socket.setReceiveTimeout(milliseconds: 30_000)
        for _ in 0..<count {
            guard let frames = try socket.receiveMultipart(), let body = frames.last else { throw HarnessError("no reply to a pipelined \(op)") }
            let reply = try JSONDecoder().decode(JSONValue.self, from: body)
            guard reply["ok"]?.boolValue == true else { throw HarnessError("\(op) failed: \(String(describing: reply).prefix(300))") }
        }
    }
}

private func pipeline(_ endpoint: String, context: Context, _ op: String, _ requests: [[String: Any]]) throws {
    try Pipeline(endpoint, context: context, op, requests).finish()
}

/// Every event a service stored, through `events.since`.
private func allEvents(_ client: WireClient) throws -> [JSONValue] {
    var events: [JSONValue] = []
    var lastSeq: Int64 = 0
    repeat {
        let page = try client.ok("events.since", ["after": events.count, "limit": 1000])
        lastSeq = page["lastSeq"]!.intValue!
        let received = page["events"]!.arrayValue
        events += received
        if received.isEmpty { break }
    } while events.count < lastSeq
    return events
}

/// A `streak.get` reply as PROTOCOL.md spells it.
private func streakState(_ user: String, asOf: String, policy: String, streak: Int, earned: Int, used: Int, lost: Int,
                         available: Int, lastLogged: String?, todayLogged: Bool) -> JSONValue {
    .object([
        "userId": .string(user), "asOf": .string(asOf), "policy": .string(policy), "streakDays": .number(Double(streak)),
        "rewardsEarned": .number(Double(earned)), "rewardsUsed": .number(Double(used)), "rewardsLost": .number(Double(lost)),
        "rewardsAvailable": .number(Double(available)), "lastLoggedDay": lastLogged.map(JSONValue.string) ?? .null,
        "todayLogged": .bool(todayLogged),
    ])
}
