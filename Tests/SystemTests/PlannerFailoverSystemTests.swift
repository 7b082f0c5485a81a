import Foundation
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// The planner over PostgreSQL as an operator runs two instances of it on two hosts, with keys,
/// both active, each deciding for its share of the partitions. One instance's host is cut off (a
/// network namespace whose link goes down): it can commit nothing, its session and its leases end
/// on the server, the other instance takes its partitions within 15 s and decides what falls due
/// meanwhile, once. Back on the network, the cut-off instance rejoins and takes a share again
/// (it does not stop), and nothing is decided twice. Root only (network namespaces), as CI runs.
@Suite(.serialized, SystemTestBackend.onceOnly) struct PlannerFailoverSystemTests {
    @Test func aCutOffPlannersPartitionsAreTakenOverWithin15SecondsAndItRejoinsWhenBack() throws {
        let host = try NetworkNamespace()
        defer { host.remove() }
        let postgres = try TestPostgres(alsoListeningOn: host.hostAddress)
        defer { postgres.stop() }
        let keys = try makeKeyDirectory()
        let common = ["--keys", keys.path, "--metrics", "off"]
        let logger = try ServiceProcess("session-logger", arguments: common + [
            "--database", postgres.url, "--api", "tcp://\(host.hostAddress):*", "--events", "tcp://\(host.hostAddress):*"])
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let cutOff = try ServiceProcess("reminder-planner", arguments: common + upstream + [
            "--database", postgres.url(host: host.hostAddress), "--instance", "cut-off",
            "--api", "tcp://\(host.address):*", "--events", "tcp://\(host.address):*"], launcher: host.launcher)
        let other = try ServiceProcess("reminder-planner", arguments: common + upstream + ["--database", postgres.url, "--instance", "other"])

        let directory = KeyDirectory(keys.path)
        let context = try Context()
        func client(_ planner: ServiceProcess) throws -> WireClient {
            try WireClient(planner.api, context: context, credentials: try adminCredentials(directory, .reminderPlanner))
        }
        let otherClient = try client(other)
        try settledShares([try client(cutOff), otherClient], timeout: 10)

        // A user in each partition, each with a reminder at the next minute at least 20 s away, put
        // through the two instances by turns: whatever the cut-off instance's share, some are in it.
        let users = usersOnePerPartition("henning")
        func putReminders(at due: Instant, through planners: [WireClient]) throws -> [String] {
            try users.enumerated().map { index, user in
                let planner = planners[index % planners.count]
                _ = try planner.ok("user.put", ["userId": user, "timeZone": "UTC", "locale": "en"])
                let reminder = try planner.ok("reminder.put", ["userId": user, "activity": "workout", "time": due.utcReminderTime])
                return try #require(reminder["id"]?.stringValue)
            }
        }
        /// The decision events of the occurrences at `due`, by reminder (the one log, read through the other instance).
        func decisions(at due: Instant) throws -> [String: [JSONValue]] {
            let decided = try otherClient.allEvents().filter {
                ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"].contains($0["type"]?.stringValue ?? "")
                    && $0["data"]?["at"]?.stringValue == due.description
            }
            return Dictionary(grouping: decided) { $0["data"]?["reminderId"]?.stringValue ?? "" }
        }
        let firstDue = Instant.nextMinuteAtLeast20SecondsAway()
        let firstReminders = try putReminders(at: firstDue, through: [try client(cutOff), otherClient])

        // Cut off, the instance can commit nothing; the server ends its session, and its leases with
        // it, and the other instance takes every partition within 15 s.
        try host.cut()
        let cut = Date()
        try waitUntil(timeout: 15, interval: 0.2, "the other planner owning all 64 partitions") { try otherClient.ownedPartitions() == 64 }
        let taken = Date().timeIntervalSince(cut)
        #expect(taken <= 15, "the partitions were taken over \(taken) s after the cut")

        // Each occurrence is decided once, by the instance that reaches the database (on time, or
        // late at takeover if it fell due before).
        try waitUntil(timeout: firstDue.timeIntervalSinceNow + 30, interval: 0.5, "every occurrence at \(firstDue) decided") {
            try decisions(at: firstDue).count == firstReminders.count
        }
        let firstDecisions = try decisions(at: firstDue)
        #expect(Set(firstDecisions.keys) == Set(firstReminders))
        #expect(firstDecisions.values.allSatisfy { $0.map { $0["type"]?.stringValue } == ["reminder.due"] }, "\(firstDecisions.values.filter { $0.count != 1 })")
        #expect(cutOff.process.isRunning, "the cut-off planner stopped while cut off")

        // Back on the network, the cut-off instance rejoins: it does not stop, it takes a share
        // again (the two adding up to 64), and has decided nothing twice.
        try host.mend()
        // Its loop may be in a connection attempt still (up to connect_timeout): a fresh client for
        // each try, so that a late reply cannot answer the next request.
        var cutOffClient = try client(cutOff)
        try waitUntil(timeout: 40, interval: 0.5, "the cut-off planner answering once back") {
            if (try? cutOffClient.ok("health")) != nil { return true }
            cutOffClient = try client(cutOff)
            return false
        }
        let shares = try settledShares([cutOffClient, otherClient], timeout: 30)
        #expect(cutOff.process.isRunning, "the cut-off planner stopped once back: \(String(describing: cutOff.process.poll()))")
        #expect(try decisions(at: firstDue).mapValues(\.count) == firstDecisions.mapValues(\.count))

        // Both decide again, each for its share, on time: occurrences put through either instance
        // at the next minute, each decided once.
        let secondDue = Instant.nextMinuteAtLeast20SecondsAway()
        let secondReminders = try putReminders(at: secondDue, through: [cutOffClient, otherClient])
        try waitUntil(timeout: secondDue.timeIntervalSinceNow + 30, interval: 0.5, "every occurrence at \(secondDue) decided") {
            try decisions(at: secondDue).count == secondReminders.count
        }
        let secondDecisions = try decisions(at: secondDue)
        #expect(Set(secondDecisions.keys) == Set(secondReminders))
        #expect(secondDecisions.values.allSatisfy { $0.count == 1 && $0[0]["type"]?.stringValue == "reminder.due" && $0[0]["data"]?["late"]?.boolValue == false },
                "shares \(shares): \(secondDecisions.values.filter { $0.count != 1 || $0[0]["data"]?["late"]?.boolValue != false })")
        #expect(try decisions(at: firstDue).mapValues(\.count) == firstDecisions.mapValues(\.count))
    }
}

extension Instant {
    /// Seconds from now until this instant (negative once it passed).
    fileprivate var timeIntervalSinceNow: TimeInterval { Double(milliseconds(since: Instant.now())) / 1000 }
}
