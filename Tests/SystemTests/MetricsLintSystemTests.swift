import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// PROTOCOL "Operations": every service's scrape passes `promtool check metrics` after traffic that
/// fills every family: each `health` counter counted at least once (it is also
/// `lht_<counter in snake case>_total`) and each labelled family present.
@Suite struct MetricsLintSystemTests {
    /// The families every service has once it answered a request and published an event.
    static let common = ["lht_requests_total", "lht_request_duration_seconds", "lht_events_published_total",
                         "lht_event_log_last_seq", "lht_auth_refused_total", "process_cpu_seconds_total"]
    /// Each service's labelled families besides those.
    static let own = ["session-logger": ["lht_intake_dropped_total"],
                      "reminder-planner": ["lht_decisions_total", "lht_upstream_lag_events"],
                      "notifier": ["lht_notifications_total", "lht_upstream_lag_events"],
                      "noalc-streak": ["lht_upstream_lag_events"]]
    /// Counters no traffic reaches: `unreadableRows` needs a damaged database file (HardeningServiceTests).
    /// Its family is in every scrape at 0 all the same, so it is linted too.
    static let unreached: Set<String> = ["unreadableRows"]

    @Test(.timeLimit(.minutes(2))) func everyServicesScrapePassesPromtoolAfterTrafficThatFillsEveryFamily() throws {
        try Tools.require("promtool")
        let metrics = ["--metrics", "127.0.0.1:0"]
        let context = try Context()
        let logger = try ServiceProcess("session-logger", arguments: metrics)
        let fromLogger = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let planner = try ServiceProcess("reminder-planner", arguments: metrics + fromLogger + ["--clock", "manual:2026-11-16T08:00:00Z"])
        let notifier = try ServiceProcess("notifier", arguments: metrics + ["--planner-api", planner.api, "--planner-events", planner.events,
                                                                            "--session-logger-api", logger.api])
        let streak = try ServiceProcess("noalc-streak", arguments: metrics + fromLogger)

        // The logger: a session and a NoAlc entry (which the planner and the streak service apply), an
        // unknown op, intake messages taken and rejected, and a closed intake connection.
        let loggerClient = try WireClient(logger.api, context: context)
        _ = try loggerClient.ok("session.log", Sessions.session(user: "mia", index: 0))
        _ = try loggerClient.ok("noalc.log", ["userId": "mia", "day": "2026-11-15", "level": "easy"])
        _ = try loggerClient.failure("no.such.op")
        do {
            let publisher = try Socket(context, .pub)
            try publisher.connect(logger.endpoints["intake"]!)
            let request = try JSONSerialization.data(withJSONObject: ["v": 1, "op": "session.log", "data": Sessions.session(user: "mia", index: 1)
                .merging(["id": "1e3b1f0c-4a5d-4c6e-8f70-000000000001"]) { $1 }])
            // Sent until both are counted: the first may go before the subscription is through (slow joiner).
            for _ in 0..<200 where try !Self.counted(["intakeAccepted", "intakeRejected"], by: loggerClient) {
                try publisher.send(multipart: [Data("intake".utf8), request])
                try publisher.send(multipart: [Data("intake".utf8), Data("not json".utf8)])
                Thread.sleep(forTimeInterval: 0.05)  // a resend now and then until the subscription is through
            }
        }
        // The planner: two workout reminders ten minutes apart, both due: one notified, one rate-limited.
        let plannerClient = try WireClient(planner.api, context: context)
        _ = try plannerClient.ok("user.put", ["userId": "mia", "timeZone": "UTC", "locale": "en"])
        for time in ["09:00", "09:10"] { _ = try plannerClient.ok("reminder.put", ["userId": "mia", "activity": "workout", "time": time]) }
        _ = try plannerClient.ok("clock.set", ["now": "2026-11-16T10:00:00Z"])

        // Every service: a client that comes and goes (apiDisconnects), then its every counter, and then
        // its scrape. The followers' upstreamReset comes from their upstream restarted on a new database
        // on the same endpoints: the logger's (the planner, the streak service), then the planner's (the notifier).
        try lint(logger, context: context)
        try logger.restartOnANewDatabase()
        try lint(planner, context: context)
        try lint(streak, context: context)
        // The notifier has handled both before the planner's history goes (it halts on the new one).
        let notifierClient = try WireClient(notifier.api, context: context)
        try waitUntil(timeout: 30, interval: 0.05, "the notifier's notified and rateLimited counted") {
            try Self.counted(["notified", "rateLimited"], by: notifierClient)
        }
        try planner.restartOnANewDatabase()
        try lint(notifier, context: context)
    }

    /// Waits until every counter of `service` (but the unreached) is above 0, then checks its scrape:
    /// each counter's family and each expected labelled family is there, and promtool passes it.
    func lint(_ service: ServiceProcess, context: Context) throws {
        _ = try WireClient(service.api, context: context).ok("health")
        let client = try WireClient(service.api, context: context)
        var counters: [String: Int64] = [:]
        func uncounted() -> [String] { counters.filter { $0.value == 0 && !Self.unreached.contains($0.key) }.keys.sorted() }
        try waitUntil(timeout: 15, interval: 0.05, "\(service.name): every counter counted (never: \(uncounted()); drive them in this test)") {
            counters = try Self.counters(client)
            return uncounted().isEmpty
        }
        let text = try Tools.get("http://\(service.endpoints["metrics"]!)/metrics")
        for (name, value) in counters {
            #expect(value > 0 || Self.unreached.contains(name), "\(service.name): \(name) was never counted; drive it in this test")
            #expect(text.contains("\n# TYPE lht_\(Self.snakeCase(name))_total counter"), "\(service.name): \(name) has no family")
        }
        for family in Self.common + Self.own[service.name]! {
            #expect(text.contains("\n# TYPE \(family) "), "\(service.name): no \(family)")
        }
        let check = try Tools.run("promtool", ["check", "metrics"], input: Data(text.utf8))
        #expect(check.status == 0, "\(service.name): \(check.output)")
    }

    static func counters(_ client: WireClient) throws -> [String: Int64] {
        // None would leave every check of them nothing to check.
        guard case .object(let counters)? = try client.ok("health")["counters"], !counters.isEmpty else { throw HarnessError("health has no counters") }
        return counters.compactMapValues(\.intValue)
    }

    static func counted(_ names: [String], by client: WireClient) throws -> Bool {
        let counters = try counters(client)
        return names.allSatisfy { (counters[$0] ?? 0) > 0 }
    }

    /// As the host names a counter's family: `noalcEntriesApplied` → `noalc_entries_applied`.
    static func snakeCase(_ name: String) -> String {
        name.reduce(into: "") { result, character in result += character.isUppercase ? "_" + character.lowercased() : String(character) }
    }
}

extension ServiceProcess {
    /// Stops and starts again on the same endpoints with an empty data directory (and database): to
    /// its followers, a new history (docs/protocol-additions.md, the log identity: they halt and count
    /// `upstreamReset`).
    func restartOnANewDatabase() throws {
        let directory = temporaryDirectory()
        var endpoints = ["--data-dir": directory.path, "--api": api, "--events": events]
        if let intake = self.endpoints["intake"] { endpoints["--intake"] = intake }
        if let database = try SystemTestBackend.database(for: directory) { endpoints["--database"] = database }
        stop()
        try restart(changing: endpoints)
    }
}
