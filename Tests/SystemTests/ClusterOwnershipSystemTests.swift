import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// What operators see of who owns which users (PROTOCOL "Cluster (PostgreSQL)", "Owners"):
/// `health.owns` with the age of the instance's lease renewal, the metrics `lht_owned_partitions`
/// and `lht_lease_age_seconds`, how long writes hold the shared log row's lock
/// (`lht_log_lock_hold_seconds`), and the alert when the owned partitions add up to less than 64.
@Suite(.serialized, SystemTestBackend.onceOnly) struct ClusterOwnershipSystemTests {
    /// Two planners over one PostgreSQL: each tells its share and a lease renewed within the last
    /// couple of seconds (they balance every second), in `health` and in a scrape promtool passes;
    /// the shares add up to 64. A write through one counts its hold of the log row's lock.
    @Test func healthAndMetricsTellEachInstancesShareAndLeaseAge() throws {
        try Tools.require("promtool")
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let arguments = ["--metrics", "127.0.0.1:0", "--database", postgres.url]
        let logger = try ServiceProcess("session-logger", arguments: arguments)
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let planners = try (0..<2).map { try ServiceProcess("reminder-planner", arguments: arguments + upstream + ["--instance", "owner\($0)"]) }
        let context = try Context()
        let clients = try planners.map { try WireClient($0.api, context: context) }
        try settledShares(clients, timeout: 15)
        // The gauges are synced twice a second: waited for until the scrapes show the settled shares.
        try waitUntil(timeout: 20, interval: 0.1, "the scraped shares adding up to \(Ownership.partitionCount)") {
            try planners.compactMap { Self.value(of: "lht_owned_partitions", in: try Tools.get("http://\($0.endpoints["metrics"]!)/metrics")) }
                .reduce(0, +) == Double(Ownership.partitionCount)
        }

        var scraped: [Double] = []
        for (planner, client) in zip(planners, clients) {
            let owns = try client.ok("health")["owns"]
            guard case .number(let age)? = owns?["leaseAgeSeconds"] else {
                Issue.record("\(planner.name): health.owns is \(String(describing: owns))")
                continue
            }
            #expect(age >= 0 && age < 2.5, "\(planner.name): lease age \(age)")
            let text = try Tools.get("http://\(planner.endpoints["metrics"]!)/metrics")
            let owned = try #require(Self.value(of: "lht_owned_partitions", in: text), "\(text.prefix(2000))")
            scraped.append(owned)
            let scrapedAge = try #require(Self.value(of: "lht_lease_age_seconds", in: text))
            #expect(scrapedAge >= 0 && scrapedAge < 2.5)
            let check = try Tools.run("promtool", ["check", "metrics"], input: Data(text.utf8))
            #expect(check.status == 0, "\(check.output)")
        }
        #expect(scraped.reduce(0, +) == Double(Ownership.partitionCount), "\(scraped)")

        // Each write holds the log row's lock the other instances wait on, and says for how long.
        let scrape = { try Tools.get("http://\(planners[0].endpoints["metrics"]!)/metrics") }
        let lockHolds = { try #require(Self.value(of: "lht_log_lock_hold_seconds_count", in: try scrape())) }
        let holdsBefore = try lockHolds()
        for user in ["hold-a", "hold-b", "hold-c"] {
            _ = try clients[0].ok("reminder.put", ["userId": user, "activity": "workout", "time": "09:00"])
        }
        try waitUntil(timeout: 5, interval: 0.1, "three more lock holds in the scrape") { try lockHolds() >= holdsBefore + 3 }
        let text = try scrape()
        #expect(try #require(Self.value(of: "lht_log_lock_hold_seconds_sum", in: text)) > 0)
        let check = try Tools.run("promtool", ["check", "metrics"], input: Data(text.utf8))
        #expect(check.status == 0, "\(check.output)")
    }

    /// `deploy/alerts.yml`'s rule, by promtool's rule tests: two instances with 32 each are quiet;
    /// once one is gone, the alert fires after 30 s, for that service only.
    @Test func theAlertFiresWhenOwnedPartitionsAddUpToLessThan64For30Seconds() throws {
        try Tools.require("promtool")
        let directory = temporaryDirectory("lht-alert-test")
        let tests = directory.appendingPathComponent("ownership-test.yml")
        let rules = repositoryRoot.appendingPathComponent("deploy/alerts.yml").path
        try """
        rule_files: ['\(rules)']
        evaluation_interval: 15s
        tests:
          - interval: 15s
            input_series:
              - series: 'lht_owned_partitions{job="lht", service="reminder-planner", instance="a"}'
                values: '32x12'
              - series: 'lht_owned_partitions{job="lht", service="reminder-planner", instance="b"}'
                values: '32 32 32 stale'
              - series: 'lht_owned_partitions{job="lht", service="notifier", instance="c"}'
                values: '64x12'
            alert_rule_test:
              - eval_time: 30s
                alertname: LHTPartitionsUnowned
                exp_alerts: []
              - eval_time: 60s
                alertname: LHTPartitionsUnowned
                exp_alerts: []
              - eval_time: 2m
                alertname: LHTPartitionsUnowned
                exp_alerts:
                  - exp_labels: {service: reminder-planner, severity: critical}
                    exp_annotations:
                      summary: "reminder-planner: only 32 of 64 partitions owned"
                      description: "Some users' time-driven work is done by no instance: an instance stopped without another taking its share, or none reaches the database. health.owns on each instance says which holds what."
        """.write(to: tests, atomically: true, encoding: .utf8)
        let run = try Tools.run("promtool", ["test", "rules", tests.path])
        #expect(run.status == 0, "\(run.output)")
    }

    /// The value of an unlabelled sample of `family` in a scrape.
    static func value(of family: String, in scrape: String) -> Double? {
        scrape.split(separator: "\n").first { $0.hasPrefix(family + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }
}
