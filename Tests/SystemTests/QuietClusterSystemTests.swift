import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// Planners over one PostgreSQL on the system clock, with no other traffic (PROTOCOL "Cluster
/// (PostgreSQL)", "Whichever instance took a write, the owner acts on it"): every write goes through
/// one instance, and the others never write anything of their own, so only what they read from the
/// database tells them of it. Each occurrence is decided once at its instant by its user's owner,
/// also after a takeover; one that fell due while its owner was paused is `late`.
@Suite(.serialized, SystemTestBackend.onceOnly) struct QuietClusterSystemTests {
    static let decisionTypes: Set<String> = ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"]

    /// A session logger and `count` planners over one PostgreSQL, sharing the partitions.
    struct Cluster {
        let postgres: TestPostgres
        let logger: ServiceProcess
        let planners: [ServiceProcess]
        let clients: [WireClient]

        init(planners count: Int) throws {
            postgres = try TestPostgres()
            let database = ["--metrics", "off", "--database", postgres.url]
            logger = try ServiceProcess("session-logger", arguments: database)
            let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
            planners = try (0..<count).map { try ServiceProcess("reminder-planner", arguments: database + upstream + ["--instance", "planner\($0)"]) }
            let context = try Context()
            clients = try planners.map { try WireClient($0.api, context: context) }
            try settledShares(clients, timeout: 15)
        }

        /// A user in every partition, each with a reminder at `due`, put through `writer` only.
        func putReminders(_ prefix: String, at due: Instant, through writer: WireClient) throws -> [String] {
            try usersOnePerPartition(prefix).map { user in
                _ = try writer.ok("user.put", ["userId": user, "timeZone": "UTC", "locale": "en"])
                return try #require(try writer.ok("reminder.put", ["userId": user, "activity": "workout", "time": due.utcReminderTime])["id"]?.stringValue)
            }
        }

        /// The decision events of the occurrences at `due`, by reminder, read through `reader`.
        func decisions(at due: Instant, through reader: WireClient) throws -> [String: [JSONValue]] {
            let decided = try reader.allEvents().filter {
                QuietClusterSystemTests.decisionTypes.contains($0["type"]?.stringValue ?? "") && $0["data"]?["at"]?.stringValue == due.description
            }
            return Dictionary(grouping: decided) { $0["data"]?["reminderId"]?.stringValue ?? "" }
        }

        /// Waits until `expected` reminders have a decision at `due` (20 s past it at most), lets
        /// late doubles show up, and returns the decisions.
        func awaitDecisions(of expected: [String], at due: Instant, through reader: WireClient) throws -> [String: [JSONValue]] {
            try waitUntil(timeout: due.secondsFromNow + 20, interval: 0.25, "\(expected.count) occurrences at \(due) decided") {
                try decisions(at: due, through: reader).count >= expected.count
            }
            Thread.sleep(forTimeInterval: 1.5)  // time for a late double decision to show up
            return try decisions(at: due, through: reader)
        }

        func stop() {
            for planner in planners where planner.process.isRunning { planner.kill() }
            postgres.stop()
        }
    }

    /// 64 users (one per partition), reminders put, moved earlier and deleted through one planner:
    /// the other planner owns about half of them and decides those at their instant, though it
    /// writes nothing itself that would make it read the others' changes.
    @Test func putsMovesAndDeletesThroughANonOwnerAreDecidedAtTheirInstant() throws {
        let cluster = try Cluster(planners: 2)
        defer { cluster.stop() }
        let writer = cluster.clients[0]
        let due = Instant.nextWholeMinute(atLeastSecondsAway: 8)
        var expected = try cluster.putReminders("quiet", at: due, through: writer)
        // Every fourth user also gets one moved earlier onto `due`, and one deleted before it.
        for user in usersOnePerPartition("quiet").enumerated().filter({ $0.offset % 4 == 0 }).map(\.element) {
            let later = try #require(try writer.ok("reminder.put", ["userId": user, "activity": "mindfulness",
                                                                  "time": due.adding(seconds: 3600).utcReminderTime])["id"]?.stringValue)
            _ = try writer.ok("reminder.put", ["id": later, "userId": user, "activity": "mindfulness", "time": due.utcReminderTime])
            expected.append(later)
            let deleted = try #require(try writer.ok("reminder.put", ["userId": user, "activity": "noalc", "time": due.utcReminderTime])["id"]?.stringValue)
            _ = try writer.ok("reminder.delete", ["id": deleted])
        }
        #expect(due.secondsFromNow > 1, "the puts took until \(due): the test proves nothing about deciding at the instant")

        // Read through the writer: any request but `health` runs in a transaction on the instance
        // that answers it, which brings its memory up to date, as the quiet one must do unasked.
        let decided = try cluster.awaitDecisions(of: expected, at: due, through: writer)
        #expect(Set(decided.keys) == Set(expected), "missing \(Set(expected).subtracting(decided.keys).count), unexpected \(Set(decided.keys).subtracting(expected).count)")
        let wrong = decided.filter { $0.value.count != 1 || $0.value[0]["type"]?.stringValue != "reminder.due" || $0.value[0]["data"]?["late"]?.boolValue != false }
        #expect(wrong.isEmpty, "decided twice, not due, or late: \(wrong.prefix(3))")
    }

    /// The only planner anyone wrote through dies before the instant: the idle ones take its
    /// partitions over from the database, not from their memory, and decide every occurrence once,
    /// on time. One of them is paused (SIGSTOP) over the instant: its users' occurrences are
    /// decided once it goes on, or by another instance, and `late`, as after a restart.
    @Test func idleInstancesTakeOverFromTheOnlyWriterAndAPausedOwnerDecidesLate() throws {
        let cluster = try Cluster(planners: 3)
        defer { cluster.stop() }
        let (writer, reader, paused) = (cluster.clients[0], cluster.clients[1], cluster.planners[2])
        let due = Instant.nextWholeMinute(atLeastSecondsAway: 12)
        let expected = try cluster.putReminders("idle", at: due, through: writer)
        cluster.planners[0].kill()
        try settledShares(Array(cluster.clients.dropFirst()), timeout: 10)
        #expect(due.secondsFromNow > 2, "the takeover took until \(due)")

        Thread.sleep(forTimeInterval: max(0, due.secondsFromNow - 1))  // until a second before the instant: the pause must span it
        paused.process.signal(SIGSTOP)
        Thread.sleep(forTimeInterval: max(0, due.secondsFromNow + 4))  // paused over the instant and a few seconds past it
        paused.process.signal(SIGCONT)

        let decided = try cluster.awaitDecisions(of: expected, at: due, through: reader)
        #expect(Set(decided.keys) == Set(expected), "missing \(Set(expected).subtracting(decided.keys).count)")
        #expect(decided.values.allSatisfy { $0.count == 1 && $0[0]["type"]?.stringValue == "reminder.due" }, "\(decided.values.filter { $0.count != 1 }.prefix(2))")
        // Late when decided well into the pause (the paused instance's share), never when decided
        // within a second of the instant (the other's).
        let (onTime, late) = decided.values.compactMap(\.first).reduce(into: (0, 0)) { counts, event in
            let after = (Instant(rfc3339: event["time"]?.stringValue ?? "") ?? due).milliseconds(since: due)
            let isLate = event["data"]?["late"]?.boolValue == true
            #expect(isLate ? after >= 1_000 : after < 3_000, "decided \(after) ms after the instant, late: \(isLate)")
            if isLate { counts.1 += 1 } else { counts.0 += 1 }
        }
        #expect(onTime > 0 && late > 0, "\(onTime) on time, \(late) late")
    }
}

extension Instant {
    /// The next whole minute at least `seconds` away: reminders are set in minutes.
    static func nextWholeMinute(atLeastSecondsAway seconds: Int64) -> Instant {
        let earliest = Instant.now().millisecondsSince1970 + seconds * 1000
        return Instant(millisecondsSince1970: (earliest + 59_999) / 60_000 * 60_000)
    }

    /// Seconds from now until this instant (negative once it passed).
    var secondsFromNow: TimeInterval { Double(milliseconds(since: Instant.now())) / 1000 }
}
