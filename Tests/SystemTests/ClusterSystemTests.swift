import Dispatch
import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// The built executables against a real PostgreSQL (PROTOCOL "Cluster (PostgreSQL)"): start-up
/// errors, waiting for a database that is not up yet, and an instance killed under load.
/// Serialized: each test starts a server of its own.
@Suite(.serialized, SystemTestBackend.onceOnly) struct ClusterSystemTests {
    /// One session that ended `minutesAgo` minutes ago, with its own id.
    static func session(_ user: String, minutesAgo: Int) -> [String: Any] {
        let end = Instant.now().adding(seconds: Int64(-minutesAgo * 60))
        return ["id": RecordID().description, "userId": user, "activity": "workout",
                "start": end.adding(seconds: -600).description, "end": end.description]
    }

    @Test func aBadDatabaseURLOrPasswordIsOneLineAndExitTwo() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let role = TestPostgres.passwordRole
        let cases: [(url: String, says: String)] = [
            ("mysql://lht@127.0.0.1/lht", "--database"),
            ("postgresql://lht@127.0.0.1:\(postgres.port)/postgres?sslmode=%zz", "invalid PostgreSQL URL"),
            ("postgresql://\(role.name):wrong-\(role.password)@127.0.0.1:\(postgres.port)/postgres", "password authentication failed"),
            ("postgresql://postgres@127.0.0.1:\(postgres.port)/no_such_database", "does not exist"),
        ]
        for (url, says) in cases {
            let run = try Tools.runService("session-logger", ["--metrics", "off", "--database", url])
            #expect(run.status == 2, "\(url): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(url): \(run.stderr)")
            #expect(run.stderr.contains(says), "\(url): \(run.stderr)")
            #expect(!run.stderr.contains(role.password), "the password is never printed: \(run.stderr)")
        }
    }

    /// A database that is down at start is waited for (logged, with back-off), and `ready` comes
    /// only once connected.
    @Test func aDatabaseThatIsNotUpYetIsAwaitedBeforeReady() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        try postgres.halt()
        let resumed = Mutex<Date?>(nil)
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
            try? postgres.resume()
            resumed.withLock { $0 = Date() }
        }
        let errors = temporaryDirectory("lht-cluster").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off", "--database", postgres.url], timeout: 40,
                                        errorLog: errors)
        let ready = Date()
        let resumedAt = try #require(resumed.withLock { $0 })
        #expect(ready >= resumedAt, "ready before the database was up")
        let log = try String(contentsOf: errors, encoding: .utf8)
        #expect(log.contains("PostgreSQL cannot be reached"), "\(log)")
        let client = try WireClient(logger.api, context: try Context())
        #expect(try client.ok("session.log", Self.session("henning", minutesAgo: 5))["seq"]?.intValue == 1)
    }

    /// Two logger processes on one database, writers on both, one SIGKILLed midway: every
    /// acknowledged session is in the log, once, and the log's seqs are 1...N.
    @Test func aKilledInstanceLosesNothingAcknowledged() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let arguments = ["--metrics", "off", "--database", postgres.url]
        let instances = [try ServiceProcess("session-logger", arguments: arguments), try ServiceProcess("session-logger", arguments: arguments)]
        let acknowledged = Mutex<[String]>([])
        let context = try Context()
        let perWriter = 200
        DispatchQueue.concurrentPerform(iterations: 4) { writer in
            guard let client = try? WireClient(instances[writer % 2].api, context: context) else { return }
            for index in 0..<perWriter {
                if writer == 0 && index == perWriter / 2 { instances[0].kill() }
                let session = Self.session("writer\(writer)", minutesAgo: index % 600)
                // After the kill, instance 0's writers get no answer: that session was never
                // acknowledged, and the writer stops.
                guard (try? client.ok("session.log", session)) != nil else { return }
                acknowledged.withLock { $0.append(session["id"] as! String) }
            }
        }
        let client = try WireClient(instances[1].api, context: context)
        let events = try client.allEvents()
        let ids = events.compactMap { $0["data"]?["id"]?.stringValue }, seqs = events.compactMap { $0["seq"]?.intValue }
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count >= 2 * perWriter + perWriter / 2, "the live instance's writers were all answered: \(acked.count)")
        #expect(Set(acked).isSubset(of: Set(ids)), "acknowledged but not in the log: \(Set(acked).subtracting(ids).prefix(5))")
        #expect(Set(ids).count == ids.count, "a session logged twice")
        #expect(seqs == Array(1...Int64(max(1, seqs.count))))
    }

    /// Two streak services over one database, one SIGKILLed while NoAlc entries pour in: the
    /// survivor takes its users over and goes on alone, and the shared log holds exactly the streak
    /// updates a single streak service on SQLite publishes for the same entries: none lost, none
    /// twice, in the same order for each user.
    @Test func aKilledStreakInstanceLosesAndDoublesNothing() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let logger = try ServiceProcess("session-logger", arguments: database)
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let instances = [try ServiceProcess("noalc-streak", arguments: database + upstream),
                         try ServiceProcess("noalc-streak", arguments: database + upstream)]
        let reference = try ServiceProcess("noalc-streak", arguments: ["--metrics", "off"] + upstream)
        let context = try Context()
        let client = try WireClient(logger.api, context: context)
        let users = ["anna", "ben", "cem"], levels = ["steady", "steady", "easy", "wild", "steady"]
        let first = LocalDay("2026-01-01")!
        for index in 0..<120 {
            if index == 60 { instances[0].kill() }
            _ = try client.ok("noalc.log", ["userId": users[index % 3], "day": first.adding(days: index / 3).description,
                                            "level": levels[index % levels.count]])
        }
        func states(of streak: ServiceProcess) throws -> [String: [JSONValue]] {
            let streakClient = try WireClient(streak.api, context: context)
            // Every entry applied, by the owner of every partition: the survivor took the killed
            // instance's users over, and applied again what that one had not.
            try waitUntil(timeout: 20, interval: 0.1, "\(streak.name) applied every entry for every user") {
                let health = try streakClient.ok("health")
                return health["upstreams"]?[0]?["appliedSeq"]?.intValue == 120 && health["owns"]?["partitions"]?.intValue == 64
            }
            let events = try streakClient.allEvents()
            #expect(events.compactMap { $0["seq"]?.intValue } == Array(1...Int64(max(1, events.count))), "gap-free")
            return Dictionary(grouping: events.compactMap { $0["data"] }, by: { $0["userId"]?.stringValue ?? "" })
        }
        let expected = try states(of: reference)
        #expect(expected.keys.sorted() == users)
        let survived = try states(of: instances[1])
        #expect(survived == expected, "\(users.map { "\($0): \(survived[$0]?.count ?? 0) updates, \(expected[$0]?.count ?? 0) expected; first different: \(zip(survived[$0] ?? [], expected[$0] ?? []).first { $0 != $1 }.map { "\($0) vs \($1)" } ?? "-")" })")
    }

    /// PostgreSQL stopped for 30 s under load: requests answer `unavailable` meanwhile (none waits
    /// for it), nothing acknowledged is lost, and the logger serves again by itself.
    @Test func aThirtySecondOutageUnderLoadLosesNothingAcknowledged() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off", "--database", postgres.url])
        let acknowledged = Mutex<[String]>([]), refused = Mutex<[String: Int]>([:])
        let context = try Context()
        let started = Date()
        let outage = (from: 5.0, until: 35.0), end = 45.0
        let writers = DispatchGroup()
        for writer in 0..<2 {
            writers.enter()
            Thread {
                defer { writers.leave() }
                guard let client = try? WireClient(logger.api, context: context) else { return }
                var index = 0
                while Date().timeIntervalSince(started) < end {
                    index += 1
                    let session = Self.session("writer\(writer)", minutesAgo: index % 600)
                    guard let reply = try? client.call("session.log", session) else { return }
                    if reply["ok"]?.boolValue == true {
                        acknowledged.withLock { $0.append(session["id"] as! String) }
                    } else {
                        refused.withLock { $0[reply["error"]?["code"]?.stringValue ?? "?", default: 0] += 1 }
                        Thread.sleep(forTimeInterval: 0.05)  // a refused writer backs off a little
                    }
                }
            }.start()
        }
        Thread.sleep(forTimeInterval: outage.from)  // writing before the outage
        let before = acknowledged.withLock { $0.count }
        try postgres.halt()
        Thread.sleep(forTimeInterval: outage.until - outage.from)  // the outage lasts this long
        let during = acknowledged.withLock { $0.count }
        try postgres.resume()
        _ = writers.wait(timeout: .now() + end + 20)

        let acked = acknowledged.withLock { $0 }
        #expect(before > 0 && acked.count > during, "served before and after: \(before), \(during), \(acked.count)")
        #expect(during - before <= 2 * 64, "acknowledged while the database was down: \(during - before)")
        #expect(refused.withLock { Array($0.keys) } == ["unavailable"], "\(refused.withLock { $0 })")
        let client = try WireClient(logger.api, context: context)
        let ids = try client.allEvents().compactMap { $0["data"]?["id"]?.stringValue }
        #expect(Set(acked).isSubset(of: Set(ids)), "acknowledged but lost: \(Set(acked).subtracting(ids).count)")
        #expect(Set(ids).count == ids.count)
    }
}
