import Foundation
import LHTSchema
import LHTSecurity
import Synchronization
import Testing
import ZeroMQ

/// The planner over PostgreSQL as an operator runs two of them on two hosts, with keys: one active,
/// one its standby. The active one's host is cut off (a network namespace whose link goes down):
/// it can decide nothing more, the standby takes over within 15 s and decides the occurrence that
/// falls due meanwhile once, and the cut-off one, back on the network, finds itself superseded and
/// stops. Root only (network namespaces), as CI runs.
@Suite(.serialized, SystemTestBackend.onceOnly) struct PlannerFailoverSystemTests {
    @Test func aCutOffPlannerStopsAndItsStandbyTakesOverWithin15Seconds() throws {
        let host = try NetworkNamespace()
        defer { host.remove() }
        let postgres = try TestPostgres(alsoListeningOn: host.hostAddress)
        defer { postgres.stop() }
        let keys = try makeKeyDirectory()
        let common = ["--keys", keys.path, "--metrics", "off"]
        let logger = try ServiceProcess("session-logger", arguments: common + [
            "--database", postgres.url, "--api", "tcp://\(host.hostAddress):*", "--events", "tcp://\(host.hostAddress):*"])
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let active = try ServiceProcess("reminder-planner", arguments: common + upstream + [
            "--database", postgres.url(host: host.hostAddress), "--instance", "cut-off",
            "--api", "tcp://\(host.address):*", "--events", "tcp://\(host.address):*"], launcher: host.launcher)

        // The standby: started now, ready only once it holds the lock.
        let standby = Mutex<(process: ServiceProcess?, ready: Date?, error: String?)>((nil, nil, nil))
        let standbyStarted = DispatchGroup()
        standbyStarted.enter()
        Thread {
            defer { standbyStarted.leave() }
            do {
                let process = try ServiceProcess("reminder-planner", arguments: common + upstream + [
                    "--database", postgres.url, "--instance", "standby"], timeout: 150)
                standby.withLock { $0 = (process, Date(), nil) }
            } catch {
                standby.withLock { $0.error = "\(error)" }
            }
        }.start()

        // A reminder whose next occurrence is at least 20 s away, set on the active planner.
        let directory = KeyDirectory(keys.path)
        let context = try Context()
        let client = try WireClient(active.api, context: context, credentials: try adminCredentials(directory, .reminderPlanner))
        let due = Instant.nextMinuteAtLeast20SecondsAway()
        _ = try client.ok("user.put", ["userId": "henning", "timeZone": "UTC", "locale": "en"])
        let reminder = try client.ok("reminder.put", ["userId": "henning", "activity": "workout", "time": due.utcReminderTime])
        let reminderId = try #require(reminder["id"]?.stringValue)
        #expect(standby.withLock { $0.ready } == nil, "the standby started while the active planner ran")

        try host.cut()
        let cut = Date()
        _ = standbyStarted.wait(timeout: .now() + 60)
        let (process, ready, failure) = standby.withLock { $0 }
        let taken = try #require(ready, "the standby never took over: \(failure ?? "")").timeIntervalSince(cut)
        #expect(taken <= 15, "the standby took over \(taken) s after the cut")
        let successor = try #require(process)

        // The occurrence is decided once, by the standby (at takeover if it fell due before).
        let successorClient = try WireClient(successor.api, context: context, credentials: try adminCredentials(directory, .reminderPlanner))
        func decisions() throws -> [String] {
            try successorClient.allEvents().filter { $0["data"]?["reminderId"]?.stringValue == reminderId && $0["data"]?["at"]?.stringValue == due.description }
                .compactMap { $0["type"]?.stringValue }
        }
        let deadline = Date().addingTimeInterval(due.timeIntervalSinceNow + 30)
        while try decisions().isEmpty, Date() < deadline { Thread.sleep(forTimeInterval: 0.5) }
        #expect(try decisions() == ["reminder.due"])

        // Back on the network, the cut-off planner finds the lock taken: it stops (exit 1, for its
        // supervisor to start it again as a standby) without deciding anything.
        try host.mend()
        let exited = active.process.poll(forUpTo: 40)
        #expect(exited?.status == 1, "the cut-off planner: \(String(describing: exited))")
        #expect(try decisions() == ["reminder.due"])
    }
}

extension Instant {
    /// Seconds from now until this instant (negative once it passed).
    fileprivate var timeIntervalSinceNow: TimeInterval { Double(milliseconds(since: Instant.now())) / 1000 }
}
