import Foundation
import Glibc
import LHTSchema
import PostgresStorage
import Testing
import ZeroMQ

/// `lht` given both instances of a planner over one PostgreSQL (PROTOCOL "Cluster"): `lht status` and
/// `lht health` list each instance with its share of the partitions, and a request one instance left
/// unanswered goes to the other only when that is safe, so a stalled instance never doubles a
/// reminder or a test notification.
@Suite(.serialized, SystemTestBackend.onceOnly) struct ClientRetrySystemTests {
    @Test func statusAndHealthListEveryInstanceAndAStoppedOneIsPassedOver() throws {
        let cluster = try PlannerCluster()
        try settledShares(cluster.clients, timeout: 20)
        let dead = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        let status = try runLHT(["status", "--json", "--session-logger", cluster.logger.api, "--planner", cluster.planners,
                                 "--notifier", dead, "--streak", dead, "--timeout", "2"])
        #expect(status.status == 3, "\(status.stderr)")  // the notifier and the streak service are not running
        let planner = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(status.stdout.utf8))["services"]?[1])
        #expect(planner["api"]?.stringValue == cluster.planners)
        let instances = planner["instances"]?.arrayValue ?? []
        #expect(instances.map { $0["api"]?.stringValue } == cluster.instances.map(\.api))
        #expect(instances.map { $0["instance"]?.stringValue } == ["a", "b"])
        let shares = instances.compactMap { $0["owns"]?["partitions"]?.intValue }
        #expect(shares.count == 2 && shares.allSatisfy { $0 > 0 } && shares.reduce(0, +) == 64, "\(status.stdout)")
        #expect(planner["ownedPartitions"]?["partitions"]?.intValue == 64)
        for instance in instances {
            guard case .number(let age)? = instance["owns"]?["leaseAgeSeconds"] else {
                Issue.record("no lease age: \(instance)")
                continue
            }
            #expect((0..<15).contains(age), "\(instance)")
        }

        let health = try runLHT(["health", "planner", "--planner", cluster.planners, "--timeout", "2"])
        #expect(health.status == 0, "\(health.stderr)")
        let rows = health.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(rows.count == 4, "\(health.stdout)")
        #expect(rows[0] == "service api status instance uptime last seq owns lease counters")
        for (row, instance) in zip(rows.dropFirst(), cluster.instances) {
            #expect(row.hasPrefix("reminder-planner \(instance.api) up 1.0.0 \(instance === cluster.instances[0] ? "a" : "b") "), "\(row)")
            #expect(row.contains("/64 "), "\(row)")
        }
        #expect(rows.last == "reminder-planner: 2 of 2 instances up, owning 64 of 64 partitions")

        // b stopped (a paused VM, a stuck process): listed as not answering, and passed over.
        let stopped = cluster.instances[1]
        stopped.process.signal(SIGSTOP)
        defer { stopped.process.signal(SIGCONT) }
        let partly = try runLHT(["health", "planner", "--planner", cluster.planners, "--timeout", "1"])
        #expect(partly.status == 3)
        #expect(partly.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }.contains("reminder-planner \(stopped.api) no answer"),
                "\(partly.stdout)")
        #expect(partly.stderr == "error: reminder-planner did not answer health at \(stopped.api) within 1 s (is it running?)\n")

        // Asked first, b takes nothing: the put goes to a; so does the test firing, which is not safe
        // to repeat but never left for b (no connection to it was ever made).
        let bFirst = "\(stopped.api),\(cluster.instances[0].api)"
        let added = try runLHT(["reminder", "add", "workout", "--time", "07:00", "--user", "rita", "--planner", bFirst, "--timeout", "1", "--json"])
        #expect(added.status == 0, "\(added.stderr)")
        let reminder = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(added.stdout.utf8))["id"]?.stringValue)
        let test = try runLHT(["reminder", "test", reminder, "--planner", bFirst, "--timeout", "1"])
        #expect(test.status == 0, "\(test.stderr)")
        stopped.process.signal(SIGCONT)
        _ = try cluster.clients[1].ok("health")
        #expect(try cluster.reminders("rita") == [reminder])
        #expect(try cluster.testFirings(of: reminder) == 1)
    }

    /// The retry scenario: the planner's log row locked from another session for 5 s while `lht`
    /// adds a reminder through both instances. The first leaves it unanswered past --timeout, the
    /// second is asked, and both carry it out once the lock is gone: one reminder, since it has the id
    /// lht made. A test firing meanwhile is not sent to the second: it fails as "may have been done".
    @Test func aStalledWriteIsRetriedOnTheOtherInstanceWithoutDoublingIt() throws {
        let cluster = try PlannerCluster()
        let database = try cluster.postgres.connect()
        defer { database.close() }

        let locked = try database.begin()
        _ = try locked.execute("SELECT last_seq FROM reminder_planner.log_head FOR UPDATE")
        let lockedAt = Date()
        let add = try userProcess(BuildProducts.executable("lht"), [
            "reminder", "add", "workout", "--time", "07:00", "--user", "lena", "--planner", cluster.planners, "--timeout", "3", "--json"])
        Thread.sleep(until: lockedAt.addingTimeInterval(5))  // the row stays locked past the client's timeout
        try locked.commit()
        let added = try add.finish()
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.seconds >= 3, "answered before the first instance's timeout: \(added.seconds) s")
        let reminder = try #require(try JSONDecoder().decode(JSONValue.self, from: Data(added.stdout.utf8))["id"]?.stringValue)
        // Both instances stored it (a late, its answer unread): two puts, one reminder.
        try waitUntil(timeout: 20, interval: 0.2, "both instances' puts committed") { try cluster.changes(of: "lena") >= 2 }
        #expect(try cluster.changes(of: "lena") == 2)
        #expect(try cluster.reminders("lena") == [reminder])

        let lockedAgain = try database.begin()
        _ = try lockedAgain.execute("SELECT last_seq FROM reminder_planner.log_head FOR UPDATE")
        let test = try runLHT(["reminder", "test", reminder, "--planner", cluster.planners, "--timeout", "1"])
        try lockedAgain.commit()
        #expect(test.status == 3)
        #expect(test.stderr == "error: reminder-planner did not answer reminder.test at \(cluster.instances[0].api) within 1 s; it may have "
                + "been carried out, so it was not sent to another instance (check before trying again)\n")
        // It was carried out, once, by the first instance, once the lock was gone.
        try waitUntil(timeout: 20, interval: 0.2, "the test firing committed") { try cluster.testFirings(of: reminder) >= 1 }
        // The second instance was never asked: nothing more comes in the next 2 s.
        var firings: Set<Int> = []
        let watchUntil = Date().addingTimeInterval(2)
        while Date() < watchUntil {
            firings.insert(try cluster.testFirings(of: reminder))
            Thread.sleep(forTimeInterval: 0.2)  // a look now and then through the window in which nothing may come
        }
        #expect(firings == [1])
    }
}

/// A session logger and two planner instances, "a" and "b", on a PostgreSQL of their own.
private final class PlannerCluster {
    let postgres: TestPostgres
    let logger: ServiceProcess
    let instances: [ServiceProcess]
    let clients: [WireClient]
    private let context: Context

    /// Both planners' apis as lht's --planner takes them.
    var planners: String { instances.map(\.api).joined(separator: ",") }

    init() throws {
        postgres = try TestPostgres()
        let common = ["--metrics", "off", "--database", postgres.url]
        logger = try ServiceProcess("session-logger", arguments: common)
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        instances = try ["a", "b"].map { try ServiceProcess("reminder-planner", arguments: common + upstream + ["--instance", $0]) }
        let context = try Context()
        self.context = context
        clients = try instances.map { try WireClient($0.api, context: context) }
    }

    deinit {
        for instance in instances { instance.process.signal(SIGCONT) }
        postgres.stop()
    }

    /// The ids of `user`'s reminders, read through the first instance.
    func reminders(_ user: String) throws -> [String] {
        try clients[0].ok("reminder.list", ["userId": user])["reminders"]?.arrayValue.compactMap { $0["id"]?.stringValue } ?? []
    }

    /// How many `reminder.changed` events the one log holds for `user`.
    func changes(of user: String) throws -> Int {
        try clients[0].allEvents().filter { $0["type"]?.stringValue == "reminder.changed" && $0["data"]?["userId"]?.stringValue == user }.count
    }

    /// How many test firings (`reminder.due` with `test:true`) the one log holds for `reminder`.
    func testFirings(of reminder: String) throws -> Int {
        try clients[0].allEvents().filter {
            $0["type"]?.stringValue == "reminder.due" && $0["data"]?["test"]?.boolValue == true && $0["data"]?["reminderId"]?.stringValue == reminder
        }.count
    }
}
