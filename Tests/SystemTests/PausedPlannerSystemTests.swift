import Foundation
import Glibc
import LHTSchema
import Testing
import ZeroMQ

/// Two planners over one PostgreSQL, idle, one of them paused (SIGSTOP: a VM paused, a process
/// stuck; its TCP connection and its session stay up, and a keepalive is answered by its kernel).
/// The server ends the paused one's idle session, and its leases with it: the other takes every
/// partition within 15 s and decides what falls due, once, answering `health` at once meanwhile.
/// Resumed (SIGCONT), the paused one commits nothing on its old session, rejoins and takes a share
/// again, and nothing is decided twice.
@Suite(.serialized, SystemTestBackend.onceOnly) struct PausedPlannerSystemTests {
    @Test func aPausedPlannersPartitionsAreTakenOverWithin15SecondsAndItRejoinsWhenResumed() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let logger = try ServiceProcess("session-logger", arguments: database)
        // Each instance on a manual clock of its own, from the same instant: the test moves them.
        let start = Instant(rfc3339: "2026-11-16T08:00:00Z")!, due = start.adding(seconds: 600)
        let common = database + ["--clock", "manual:\(start)", "--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let paused = try ServiceProcess("reminder-planner", arguments: common + ["--instance", "paused"])
        let other = try ServiceProcess("reminder-planner", arguments: common + ["--instance", "other"])
        let context = try Context()
        let otherClient = try WireClient(other.api, context: context)
        try settledShares([try WireClient(paused.api, context: context), otherClient], timeout: 10)

        // A user in each partition, a reminder each, put through the instance that stays: whatever
        // the paused one's share, some are in it.
        let reminders = try usersOnePerPartition("pia").map { user in
            _ = try otherClient.ok("user.put", ["userId": user, "timeZone": "UTC", "locale": "en"])
            return try #require(try otherClient.ok("reminder.put", ["userId": user, "activity": "workout", "time": due.utcReminderTime])["id"]?.stringValue)
        }

        paused.process.signal(SIGSTOP)
        defer { paused.process.signal(SIGCONT) }
        let stopped = Date()
        let (taken, slowestHealth) = try takeover(by: otherClient, since: stopped, interval: 0.2)
        #expect(taken <= 15, "the partitions were taken over \(taken) s after the pause")
        #expect(slowestHealth < 0.5, "health took \(slowestHealth) s during the takeover")

        // The other decides every occurrence, the paused one's share too.
        #expect(try otherClient.ok("clock.set", ["now": due.adding(seconds: 60).description])["decided"]?.intValue == Int64(reminders.count))

        // Resumed, it rejoins: a share each again, and every occurrence still decided once, also
        // once its own clock has passed them.
        let pausedClient = try resume(paused, rejoining: otherClient, context: context)
        #expect(paused.process.isRunning, "the resumed planner stopped")
        #expect(try pausedClient.ok("clock.set", ["now": due.adding(seconds: 120).description])["decided"]?.intValue == 0)
        let decided = try otherClient.decisions(at: due)
        #expect(Set(decided.keys) == Set(reminders))
        #expect(decided.values.allSatisfy { $0.count == 1 }, "\(decided.values.filter { $0.count != 1 })")
    }
}

extension WireClient {
    /// The decision events of the occurrences at `due`, by reminder, from this instance's log.
    func decisions(at due: Instant) throws -> [String: [JSONValue]] {
        let decided = try allEvents().filter {
            ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"].contains($0["type"]?.stringValue ?? "")
                && $0["data"]?["at"]?.stringValue == due.description
        }
        return Dictionary(grouping: decided) { $0["data"]?["reminderId"]?.stringValue ?? "" }
    }
}
