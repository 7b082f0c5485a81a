import Foundation
import Glibc
import LHTClient
import LHTSchema
import PostgresStorage
import TestSupport
import ZeroMQ

/// `bench planner --postgres [--quick] [--users 100000] [--reminders 10] [--sessions 300]`
///
/// The reminder planner on PostgreSQL (`--database`; a server of its own, as `bench postgres`
/// starts it) beside the same planner on SQLite, in the same run, each holding users × reminders
/// (1,000,000; 100,000 with `--quick`), the figures as ratios PG / SQLite:
/// 1. Start-up: the built `reminder-planner` started three times on each, by turns; the time from
///    spawning it to its ready line, and its peak resident memory (VmHWM) then.
/// 2. Three instances: the built planner started three times on PostgreSQL, each beside those
///    already running (all active, sharing the 64 partitions): each one's time to its ready line,
///    its peak resident memory then, and the time until the shares are even; then, three times, the
///    oldest SIGKILLed and the time until the survivors own all 64 partitions (`health.owns`), a new
///    instance started in its place; beside (1)'s cold start. Each round also SIGSTOPs the oldest
///    (paused: the server ends its idle session) and takes the same time, beside the SIGKILL's.
/// 3. A covering session acknowledged → `reminder.cancelled`, logger and planner in-process on
///    PostgreSQL, with and without libpq's pipeline, beside both on SQLite (`PlannerPostgresAckBenchmark`).
/// `--ack-only`: (3) alone.
enum PlannerPostgresBenchmark {
    static let starts = 3, takeovers = 3
    /// Rows per multi-row INSERT when filling PostgreSQL.
    static let batch = 5_000

    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let users = Options.int(arguments, "--users", quick ? 10_000 : 100_000)
        let perUser = Options.int(arguments, "--reminders", 10)
        let sessions = Options.int(arguments, "--sessions", quick ? 50 : 300)
        guard let binaries = try? TestPostgres.binaries() else {
            return print("planner --postgres: skipped (no PostgreSQL server in /usr/lib/postgresql/<version>/bin; "
                         + "deploy/install-prerequisites --bench installs it)")
        }
        let server = try TestPostgres()
        defer { server.stop() }
        let admin = try server.connect()
        let context = try Context()
        let sqliteLogger = try InProcessService.sessionLogger(context: context)
        defer { sqliteLogger.stop() }
        let postgresLogger = try InProcessService.sessionLogger(context: context, extra: ["--database", server.url])
        defer { postgresLogger.stop() }
        let sqliteDirectory = temporaryDirectory("lht-bench-planner-sqlite").path
        let postgresDirectory = temporaryDirectory("lht-bench-planner-pg").path
        let database = ["--database", server.url]

        // Both schemas made by the planner's own migrations, then the same reminders in each.
        try PlannerBenchmark.startPlanner(context: context, directory: sqliteDirectory, logger: sqliteLogger).stop()
        try PlannerBenchmark.startPlanner(context: context, directory: postgresDirectory, logger: postgresLogger, extra: database).stop()
        print("seeding \(users) users × \(perUser) reminders in each …")
        let sqliteSeed = try PlannerBenchmark.time { try PlannerBenchmark.seed(directory: sqliteDirectory, users: users, perUser: perUser) }
        let postgresSeed = try PlannerBenchmark.time { try seed(admin, users: users, perUser: perUser) }
        let reminders = users * perUser
        if arguments.contains("--ack-only") {
            return try PlannerPostgresAckBenchmark.run(context: context, server: server, users: users, sessions: sessions,
                                                       sqlite: (sqliteLogger, sqliteDirectory), postgres: (postgresLogger, postgresDirectory))
        }
        print("planner on PostgreSQL \(binaries.split(separator: "/").dropLast().last ?? "?") (fsync on, synchronous_commit on) beside SQLite, "
              + "\(reminders) reminders (\(users) users × \(perUser)) in each")
        print(String(format: "  seeded: SQLite %.1f s (a row a statement, one transaction); PostgreSQL %.1f s, %.0f rows/s "
                     + "(multi-row INSERTs of %d rows, then VACUUM ANALYZE)", sqliteSeed, postgresSeed, Double(reminders) / postgresSeed, batch))

        // 1. Start-up, the built executable (its VmHWM is the planner's alone), by turns.
        let sqliteArguments = PlannerBenchmark.plannerArguments(directory: sqliteDirectory, logger: sqliteLogger) + ["--metrics", "off"]
        let postgresArguments = PlannerBenchmark.plannerArguments(directory: postgresDirectory, logger: postgresLogger) + ["--metrics", "off"] + database
        var sqliteStarts: [Start] = [], postgresStarts: [Start] = []
        for _ in 0..<starts {
            sqliteStarts.append(try start(sqliteArguments))
            postgresStarts.append(try start(postgresArguments))
        }
        let sqliteReady = median(sqliteStarts.map(\.seconds)), postgresReady = median(postgresStarts.map(\.seconds))
        let sqlitePeak = median(sqliteStarts.map(\.peak)), postgresPeak = median(postgresStarts.map(\.peak))
        print("start-up: the built reminder-planner, spawned → its ready line, \(starts) times on each by turns (the median; each in brackets); "
              + "peak RSS: its VmHWM at ready")
        print(String(format: "  SQLite       ready %6.2f s [%@]   peak RSS %5.0f MB [%@]", sqliteReady, each(sqliteStarts.map(\.seconds)),
                     sqlitePeak, each(sqliteStarts.map(\.peak), "%.0f")))
        print(String(format: "  PostgreSQL   ready %6.2f s [%@]   peak RSS %5.0f MB [%@]", postgresReady, each(postgresStarts.map(\.seconds)),
                     postgresPeak, each(postgresStarts.map(\.peak), "%.0f")))
        print(String(format: "  ratio PG/SQLite: ready %.2f, peak RSS %.2f", postgresReady / sqliteReady, postgresPeak / sqlitePeak))

        // 2. Three instances, every one active: each started beside those running, then the oldest
        // SIGKILLed and replaced, `takeovers` times.
        print("three instances: the built reminder-planner on PostgreSQL, each started beside those running (spawn → ready line; peak RSS: "
              + "its VmHWM at ready; then until the instances' shares of the \(Ownership.partitionCount) partitions are even, health.owns); "
              + "SIGKILL of the oldest → the survivors own all \(Ownership.partitionCount), and a new one started in its place, \(takeovers) times")
        var instances: [StreakBenchmark.Child] = []
        defer { for instance in instances { instance.stop() } }
        var clusterStarts: [Start] = []
        func startInstance() throws {
            var child: StreakBenchmark.Child!
            let seconds = try PlannerBenchmark.time { child = try StreakBenchmark.Child("reminder-planner", postgresArguments, readyTimeout: 3600) }
            let peak = ProcessStatus.megabytes("VmHWM", of: "\(child.process.pid)")
            instances.append(child)
            var shares: [Int] = []
            let settled = try PlannerBenchmark.time { shares = try waitForShares(of: instances, context: context, balanced: true) }
            if instances.count > 1 { clusterStarts.append((seconds, peak)) }
            print(String(format: "  started beside %d   ready %6.2f s   peak RSS %5.0f MB   shares %@ %5.2f s after ready",
                         instances.count - 1, seconds, peak, "\(shares)", settled))
        }
        for _ in 0..<3 { try startInstance() }
        var takeoverSeconds: [Double] = [], pausedTakeoverSeconds: [Double] = []
        for round in 1...takeovers {
            // SIGKILL, then SIGSTOP (paused: its session stays until the server ends it), each time on the oldest.
            for signal in [SIGKILL, SIGSTOP] {
                let stopped = instances.removeFirst()
                var shares: [Int] = []
                let seconds = try PlannerBenchmark.time {
                    stopped.process.signal(signal)
                    shares = try waitForShares(of: instances, context: context)
                }
                stopped.process.signal(SIGKILL)
                stopped.process.wait()
                if signal == SIGKILL { takeoverSeconds.append(seconds) } else { pausedTakeoverSeconds.append(seconds) }
                print(String(format: "  takeover %d after %@   %6.2f s   the survivors' shares %@", round, signal == SIGKILL ? "SIGKILL" : "SIGSTOP",
                             seconds, "\(shares)"))
                try startInstance()
            }
        }
        let pausedTakeover = median(pausedTakeoverSeconds)
        print(String(format: "  takeover after SIGSTOP %6.2f s (median) beside after SIGKILL %6.2f s: target ≤ 15 s after SIGSTOP: %@",
                     pausedTakeover, median(takeoverSeconds), pausedTakeover <= 15 ? "met" : "NOT met"))
        let takeover = median(takeoverSeconds)
        print(String(format: "  median: ready %6.2f s, peak RSS %5.0f MB a start beside others (alone on PostgreSQL: %.2f s, %.0f MB); "
                     + "takeover %6.2f s, ratio %.2f × a cold start: the survivors hold every reminder already and take the partitions "
                     + "on their next balance (every second)", median(clusterStarts.map(\.seconds)), median(clusterStarts.map(\.peak)),
                     postgresReady, postgresPeak, takeover, takeover / postgresReady))
        // Before an in-process planner on the same database, which would share the partitions with them.
        for instance in instances { instance.stop() }
        instances = []

        // 3. Ack → reminder.cancelled, in-process as `bench planner` measures it.
        try PlannerPostgresAckBenchmark.run(context: context, server: server, users: users, sessions: sessions,
                                            sqlite: (sqliteLogger, sqliteDirectory), postgres: (postgresLogger, postgresDirectory))
    }

    typealias Start = (seconds: Double, peak: Double)

    /// The built planner from spawn to its ready line, its VmHWM then, and stopped (SIGTERM).
    static func start(_ arguments: [String]) throws -> Start {
        var child: StreakBenchmark.Child!
        let seconds = try PlannerBenchmark.time { child = try StreakBenchmark.Child("reminder-planner", arguments, readyTimeout: 3600) }
        defer { child.stop() }
        return (seconds, ProcessStatus.megabytes("VmHWM", of: "\(child.process.pid)"))
    }

    /// The planner's tables filled as `PlannerBenchmark.seed` fills SQLite's, the same users and
    /// rules, through multi-row INSERTs: a statement per `batch` rows is a round trip and a commit
    /// per 5,000 rows, not per row (libpq here has no COPY). The id is the 16 bytes of a random
    /// UUID (`uuid_send`, as `RecordID.bytes`). VACUUM ANALYZE afterwards, as autovacuum would have
    /// done to a table this size: the first start would otherwise pay for setting every row's hint bits.
    static func seed(_ connection: PostgresConnection, users: Int, perUser: Int) throws {
        for first in stride(from: 0, to: users, by: batch) {
            let rows = (first..<min(first + batch, users)).map { "('u\($0)', 'Europe/Berlin', 'en', 0)" }
            try connection.execute(#"INSERT INTO reminder_planner."user" (user_id, time_zone, locale, paused) VALUES "# + rows.joined(separator: ", "))
        }
        let usersPerBatch = max(batch / perUser, 1)
        for first in stride(from: 0, to: users, by: usersPerBatch) {
            var rows: [String] = []
            for user in first..<min(first + usersPerBatch, users) {
                for k in 0..<perUser {
                    let rule = PlannerBenchmark.seededRule(user: user, k: k, perUser: perUser).bits
                    rows.append("(uuid_send('\(RecordID())'), 'u\(user)', \(rule), NULL, NULL, \(PlannerBenchmark.seededCreatedMs))")
                }
            }
            try connection.execute("INSERT INTO reminder_planner.reminder (id, user_id, rule, title, body, created_at_ms) VALUES "
                                   + rows.joined(separator: ", "))
        }
        // Every partition decided through the clock's start (the planner's start made the rows).
        try connection.execute("""
            INSERT INTO reminder_planner.decided_through (partition_index, at_ms) SELECT p, $1::bigint FROM generate_series(0, \(Ownership.partitionCount - 1)) p
            ON CONFLICT (partition_index) DO UPDATE SET at_ms = excluded.at_ms
            """, [.integer(PlannerBenchmark.clockStart.millisecondsSince1970)])
        try connection.execute(#"VACUUM ANALYZE reminder_planner.reminder, reminder_planner."user""#)
    }

    /// Until the instances' `health.owns` add up to all 64 partitions, each holding some (they
    /// rebalance every second), and with `balanced` until the shares are as even as they get (a
    /// share moving from one instance to another adds up to 64 on the way); their shares. At most 60 s.
    static func waitForShares(of instances: [StreakBenchmark.Child], context: Context, balanced: Bool = false) throws -> [Int] {
        let clients = instances.map { ServiceClient(context: context, endpoint: $0.endpoints["api"]!) }
        let deadline = Date().addingTimeInterval(60)
        while true {
            let shares = clients.map { (try? $0.call(Ops.health, NoFields(), timeoutMilliseconds: 5000))?.owns?.partitions ?? 0 }
            if shares.reduce(0, +) == Ownership.partitionCount && shares.allSatisfy({ $0 > 0 })
                && (!balanced || shares.max()! - shares.min()! <= 1) { return shares }
            guard Date() < deadline else { throw BenchError("the planner instances' shares did not settle within 60 s: \(shares)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    static func median(_ values: [Double]) -> Double { LoadClients.percentile(values, 0.5) }
    static func percentile(_ values: [Double], _ fraction: Double) -> Double { LoadClients.percentile(values, fraction) }
    static func each(_ values: [Double], _ format: String = "%.2f") -> String { values.map { String(format: format, $0) }.joined(separator: ", ") }
}
