import Foundation
import LHTSchema
import ZeroMQ

/// A session logger and a reminder planner on a manual clock, started from the built executables,
/// with clients for both and a subscriber that records every planner event.
final class PlannerRig {
    let context: Context
    let logger: ServiceProcess
    let planner: ServiceProcess
    let loggerClient: WireClient
    private(set) var plannerClient: WireClient
    private(set) var events: EventLog

    /// `clock` is the manual clock's start, e.g. "2026-11-16T08:00:00+01:00" (a Monday in Berlin).
    init(clock: String, extraArguments: [String] = [], environment: [String: String] = [:], errorLog: URL? = nil) throws {
        context = try Context()
        logger = try ServiceProcess("session-logger")
        planner = try ServiceProcess("reminder-planner", arguments: [
            "--clock", "manual:\(clock)", "--session-logger-api", logger.api, "--session-logger-events", logger.events,
        ] + extraArguments, environment: environment, errorLog: errorLog)
        loggerClient = try WireClient(logger.api, context: context)
        plannerClient = try WireClient(planner.api, context: context)
        events = try EventLog(planner.events, context: context)
    }

    /// After a planner restart its ports are new: reconnect.
    func reconnect() throws {
        plannerClient = try WireClient(planner.api, context: context)
        events = try EventLog(planner.events, context: context)
    }

    func user(_ id: String, zone: String = "Europe/Berlin", locale: String = "de", paused: Bool = false) throws {
        _ = try plannerClient.ok("user.put", ["userId": id, "timeZone": zone, "locale": locale, "paused": paused])
    }

    /// Stores a reminder and returns its id.
    func reminder(_ user: String, _ activity: String, _ time: String, lookback: Int? = nil, weekdays: [String]? = nil,
                  id: String? = nil, enabled: Bool? = nil) throws -> String {
        var data: [String: Any] = ["userId": user, "activity": activity, "time": time]
        if let lookback { data["lookbackHours"] = lookback }
        if let weekdays { data["weekdays"] = weekdays }
        if let id { data["id"] = id }
        if let enabled { data["enabled"] = enabled }
        return try plannerClient.ok("reminder.put", data)["id"]!.stringValue!
    }

    /// Logs a session with the session logger and returns its id.
    func session(_ user: String, _ activity: String, _ start: String, _ end: String) throws -> String {
        try loggerClient.ok("session.log", ["userId": user, "activity": activity, "start": start, "end": end])["id"]!.stringValue!
    }

    func noalc(_ user: String, day: String, level: String = "steady") throws -> String {
        try loggerClient.ok("noalc.log", ["userId": user, "day": day, "level": level])["id"]!.stringValue!
    }

    /// Moves the manual clock to `instant`; returns how many occurrences were decided.
    @discardableResult
    func advance(to instant: String) throws -> Int {
        Int(try plannerClient.ok("clock.set", ["now": instant])["decided"]!.intValue!)
    }

    func upcoming(_ user: String, days: Int = 7) throws -> [JSONValue] {
        try plannerClient.ok("reminder.upcoming", ["userId": user, "days": days])["occurrences"]!.arrayValue
    }

    /// The status of `reminder`'s occurrence at `at` (any RFC 3339 spelling), as upcoming shows it.
    func status(_ user: String, _ reminder: String, at: String, days: Int = 7) throws -> String? {
        let instant = Instant(rfc3339: at)!.description
        return try upcoming(user, days: days).first { $0["reminderId"]?.stringValue == reminder && $0["at"]?.stringValue == instant }?["status"]?.stringValue
    }
}

/// Every event a publisher sends, kept in arrival order, with waiting by predicate.
final class EventLog {
    private let subscriber: EventSubscriber
    private(set) var received: [(topic: String, envelope: JSONValue)] = []

    init(_ endpoint: String, context: Context) throws {
        subscriber = try EventSubscriber(endpoint, context: context)
    }

    /// Drains what has arrived, waiting up to `timeout` for one more if `until` is not yet met.
    @discardableResult
    func wait(timeout: TimeInterval = 5, until done: ([(topic: String, envelope: JSONValue)]) -> Bool) throws -> [(topic: String, envelope: JSONValue)] {
        let deadline = Date().addingTimeInterval(timeout)
        while !done(received) && Date() < deadline {
            received += try subscriber.receive(1, timeout: min(0.2, max(0.01, deadline.timeIntervalSinceNow)))
        }
        received += try subscriber.receive(1000, timeout: 0.05)
        return received
    }

    /// Events of `type` (e.g. "reminder.cancelled") for `reminder`, after waiting for `count` of them.
    func of(_ type: String, reminder: String? = nil, count: Int = 1, timeout: TimeInterval = 5) throws -> [JSONValue] {
        func matching(_ all: [(topic: String, envelope: JSONValue)]) -> [JSONValue] {
            all.map(\.envelope).filter { $0["type"]?.stringValue == type && (reminder == nil || $0["data"]?["reminderId"]?.stringValue == reminder) }
        }
        return matching(try wait(timeout: timeout) { matching($0).count >= count })
    }
}
