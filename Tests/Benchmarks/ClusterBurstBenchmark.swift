import Foundation
import LHTClient
import LHTSchema
import PostgresStorage
import TestSupport
import ZeroMQ

/// `bench cluster [--quick] [--reminders 100000] [--per-user 10] [--planners 3] [--lead 40]`
///
/// A burst on the system clock: `reminders` (100,000; 10,000 with `--quick`) daily reminders due at
/// one whole minute, decided by the built `reminder-planner` executables, in the same run:
/// 1. ONE planner on SQLite (the baseline);
/// 2. `planners` instances on one PostgreSQL (a server of its own, fsync on), sharing the 64 partitions.
/// Each from its instant until every occurrence is decided (SQLite: its log's decision events;
/// PostgreSQL: the decision rows): decisions/s. Meanwhile a client per instance asks `reminder.list`
/// over and over (p50/p99/max), and on PostgreSQL a session of its own takes the log row's lock
/// (`SELECT … FOR UPDATE`) over and over: its waits are what another instance's write waits for
/// the lock. The planners' own `lht_log_lock_hold_seconds`, scraped before and after, say how long
/// each of their transactions held it: the target is on those holds. `lead`: seconds from
/// the start of each part's seeding to its instant (raise it if seeding and starting take longer).
enum ClusterBurstBenchmark {
    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let reminders = Options.int(arguments, "--reminders", quick ? 10_000 : 100_000)
        let perUser = Options.int(arguments, "--per-user", 10), users = max(1, reminders / perUser)
        let count = users * perUser, instances = Options.int(arguments, "--planners", 3)
        let lead = Int64(Options.int(arguments, "--lead", quick ? 40 : 75))
        guard (try? TestPostgres.binaries()) != nil else {
            return print("cluster: skipped (no PostgreSQL server in /usr/lib/postgresql/<version>/bin; deploy/install-prerequisites --bench installs it)")
        }
        let context = try Context()
        print("burst: \(count) reminders (\(users) users × \(perUser), daily, UTC) due at one whole minute, the built reminder-planner on the system clock")

        // 1. One planner on SQLite.
        let sqlite: ClusterBurstProbes.Result
        do {
            let logger = try InProcessService.sessionLogger(context: context)
            defer { logger.stop() }
            let directory = temporaryDirectory("lht-bench-cluster-sqlite").path
            try PlannerBenchmark.startPlanner(context: context, directory: directory, logger: logger).stop()
            let due = ClusterBurstSeed.instant(atLeast: lead)
            try ClusterBurstSeed.sqlite(directory: directory, users: users, perUser: perUser, due: due)
            let planner = try StreakBenchmark.Child("reminder-planner", systemClockArguments(directory: directory, logger: logger), readyTimeout: 600)
            defer { planner.stop() }
            try requireAhead(due)
            let counter = try DecisionCounter(context: context, endpoint: planner.endpoints["api"]!)
            sqlite = try probes(context, [planner]).run(due: due, count: count, timeout: 600) { try counter.next() }
        }
        report("1 planner on SQLite", sqlite, count: count)

        // 2. `instances` planners on PostgreSQL.
        let server = try TestPostgres()
        defer { server.stop() }
        let postgres: ClusterBurstProbes.Result
        let holds: LockHoldHistogram
        do {
            let logger = try InProcessService.sessionLogger(context: context, extra: ["--database", server.url])
            defer { logger.stop() }
            let database = ["--database", server.url]
            try PlannerBenchmark.startPlanner(context: context, directory: temporaryDirectory("lht-bench-cluster-pg").path, logger: logger,
                                              extra: database).stop()
            let admin = try server.connect()
            let due = ClusterBurstSeed.instant(atLeast: lead)
            try ClusterBurstSeed.postgres(admin, users: users, perUser: perUser, due: due)
            var planners: [StreakBenchmark.Child] = []
            defer { for planner in planners { planner.stop() } }
            for index in 0..<instances {
                let directory = temporaryDirectory("lht-bench-cluster-pg\(index)").path
                let arguments = systemClockArguments(directory: directory, logger: logger, metrics: "127.0.0.1:0") + database
                planners.append(try StreakBenchmark.Child("reminder-planner", arguments + ["--instance", "burst\(index)"], readyTimeout: 600))
            }
            let shares = try PlannerPostgresBenchmark.waitForShares(of: planners, context: context, balanced: true)
            try requireAhead(due)
            print("  PostgreSQL: \(instances) instances, shares \(shares)")
            let metrics = planners.map { $0.endpoints["metrics"]! }
            let holdsBefore = try LockHoldHistogram.scrape(metrics)
            let decided = "SELECT count(*) FROM reminder_planner.decision WHERE at_ms = \(due.millisecondsSince1970)"
            postgres = try probes(context, planners, postgres: server.url).run(due: due, count: count, timeout: 600) {
                Int(try admin.execute(decided).first?.text(0) ?? "") ?? 0
            }
            holds = try LockHoldHistogram.scrape(metrics) - holdsBefore
        }
        report("\(instances) planners on PostgreSQL", postgres, count: count)

        let sqliteRate = Double(count) / sqlite.seconds, postgresRate = Double(count) / postgres.seconds
        print(String(format: "  decisions/s: %d PostgreSQL planners %.0f beside 1 SQLite planner %.0f: ratio %.2f",
                     instances, postgresRate, sqliteRate, postgresRate / sqliteRate))
        reportHolds(holds, waits: postgres.lockWaits)
        let listP99 = postgres.lists.map { LoadClients.percentile($0, 0.99) }.max() ?? .nan
        print(String(format: "  target reminder.list p99 ≤ 100 ms on every PostgreSQL instance during the burst (worst %.1f ms): %@",
                     listP99, PlannerBenchmark.verdict(listP99 <= 100 && postgres.failedLists == 0)))
    }

    /// The built planner on the system clock, following `logger`, on wildcard loopback ports.
    static func systemClockArguments(directory: String, logger: InProcessService, metrics: String = "off") -> [String] {
        ["--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--data-dir", directory, "--metrics", metrics,
         "--session-logger-api", logger.api, "--session-logger-events", logger.events]
    }

    static func probes(_ context: Context, _ planners: [StreakBenchmark.Child], postgres: String? = nil) -> ClusterBurstProbes {
        ClusterBurstProbes(context: context, planners: planners.map { $0.endpoints["api"]! }, user: UserID("u0")!, postgresURL: postgres)
    }

    static func requireAhead(_ due: Instant) throws {
        let ahead = Double(due.millisecondsSince1970) / 1000 - Date().timeIntervalSince1970
        guard ahead > 2 else { throw BenchError("seeding and starting took until \(ahead) s before the instant: raise --lead") }
    }

    /// The planners' holds of the log row's lock during the burst, with what the probe session waited beside them.
    static func reportHolds(_ holds: LockHoldHistogram, waits: [Double]) {
        let longest = holds.longest
        print(String(format: "    log row lock holds (lht_log_lock_hold_seconds): %.0f transactions, mean %.1f ms, longest in (%g, %g] ms, %.0f over 50 ms",
                     holds.count, holds.sum / max(holds.count, 1) * 1000, longest.lower * 1000, longest.upper * 1000, holds.over(0.05)))
        Target.report(String(format: "hold p99 ≤ %g ms, longest ≤ %g ms; the probe waited p99 %.1f ms, max %.1f ms",
                             holds.quantileBound(0.99) * 1000, longest.upper * 1000, LoadClients.percentile(waits, 0.99), waits.max() ?? .nan),
                      target: "log row lock held ≤ 50 ms at p99 and never over 100 ms during the burst",
                      met: holds.count > 0 && holds.quantileBound(0.99) <= 0.05 && holds.over(0.1) == 0)
    }

    static func report(_ name: String, _ result: ClusterBurstProbes.Result, count: Int) {
        print(String(format: "  %@: %d decided %.2f s after the instant, %.0f decisions/s", name, count, result.seconds, Double(count) / result.seconds))
        for (index, lists) in result.lists.enumerated() {
            print(String(format: "    instance %d reminder.list   p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms   (%d answered)", index,
                         LoadClients.percentile(lists, 0.5), LoadClients.percentile(lists, 0.99), lists.max() ?? .nan, lists.count))
        }
        if result.failedLists > 0 { print("    reminder.list unanswered or refused: \(result.failedLists)") }
        if !result.lockWaits.isEmpty {
            let waits = result.lockWaits
            print(String(format: "    log row lock wait (a session of its own, SELECT … FOR UPDATE)   p50 %6.2f ms   p99 %6.2f ms   max %6.2f ms   (%d takes)",
                         LoadClients.percentile(waits, 0.5), LoadClients.percentile(waits, 0.99), waits.max() ?? .nan, waits.count))
        }
    }
}
