import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// The whole chain with keys: a session cancels a reminder, the notifier tells, a quick action answers.
@Suite(.serialized) struct SecuredChainSystemTests {
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
}
