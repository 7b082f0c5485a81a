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

    /// `streak.get` once the feed has caught up far enough for `condition` (delivery is asynchronous);
    /// throws if it has not within 20 s.
    func stateWhen(_ data: [String: Any], on client: WireClient? = nil, _ condition: (JSONValue) -> Bool) throws -> JSONValue {
        var state = JSONValue.null
        try waitUntil(timeout: 20, interval: 0.02, "streak.get \(data) giving the state waited for (it gave \(state))") {
            state = try (client ?? self.client).ok("streak.get", data)
            return condition(state)
        }
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
