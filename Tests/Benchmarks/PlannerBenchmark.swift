import Foundation
import GRDB
import LHTClient
import LHTSchema
import Logging
import ReminderPlanner
import ReminderPlanning
import ServiceHost
import Storage
import SessionLogger
import TestSupport
import ZeroMQ

/// `bench planner [--quick] [--users 100000] [--reminders 10] [--burst 100000] [--sessions 300] [--active 0]`
///
/// 1. Start-up: users × reminders stored in the planner's database, loaded by a fresh planner three
///    times; the median time beside the median of a bare SQL scan of the same rows before each, and
///    the first start's resident memory beside the size of the database file. Then the same number
///    put through a fresh planner's api, a clean stop, and three starts (`startAfterAPILoad`).
/// 2. A burst: one `clock.advance` over `burst` due occurrences, decided and persisted, beside
///    inserting as many rows in one transaction with the same durability (the persistence floor).
/// 3. Cancellation latency: a covering session acknowledged by the session logger until its
///    `reminder.cancelled` arrives from the planner, beside the logger's own ack round trip and a
///    bare one-row commit that waits for the disk: the planner's commit of the cancellation, which
///    is synced before it is published, costs at least that.
///
/// `--active P`: P percent of the users logged a session of each activity shortly before the burst,
/// which covers their occurrences in it: each of their decisions asks the store what covers it,
/// reads a row back and is suppressed, where an occurrence nothing stored can cover is decided
/// without asking (`LatestLogged`). 0 by default, as the figures of earlier stops were taken; 100 is the worst case.
///
/// `--quick` (about 15 s) uses 10,000 users and a 20,000-occurrence burst; the start-up targets
/// scale with the number of reminders (1 s and 250 MB per million).
///
/// `--postgres`: the planner on PostgreSQL beside SQLite instead (`PlannerPostgresBenchmark`).
enum PlannerBenchmark {
    static let clockStart = Instant(rfc3339: "2026-11-16T00:00:00Z")!

    static func run(_ arguments: [String]) throws {
        if arguments.contains("--postgres") { return try PlannerPostgresBenchmark.run(arguments) }
        let quick = arguments.contains("--quick")
        let users = Options.int(arguments, "--users", quick ? 10_000 : 100_000)
        let perUser = Options.int(arguments, "--reminders", 10)
        let burst = Options.int(arguments, "--burst", quick ? 20_000 : 100_000)
        let sessions = Options.int(arguments, "--sessions", quick ? 50 : 300)
        let activePercent = Options.int(arguments, "--active", 0)
        // Metrics on, as the executables run them, so the scrape below is a real one.
        let prometheus = PrometheusMetrics()
        prometheus.bootstrap()
        let metricsServer = try MetricsServer(host: "127.0.0.1", port: 0, metrics: prometheus)
        let context = try Context()
        let logger = try InProcessService.sessionLogger(context: context)
        defer { logger.stop() }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lht-bench-planner-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        print("seeding \(users) users × \(perUser) reminders …")
        func startPlanner() throws -> InProcessService { try Self.startPlanner(context: context, directory: directory, logger: logger) }
        try startPlanner().stop()  // creates the schema through the planner's own migrations
        try seed(directory: directory, users: users, perUser: perUser, activePercent: activePercent)
        let databaseMegabytes = Double(fileSize(directory + "/reminder-planner.sqlite")) / 1_048_576

        // One scan can differ much from the next on a shared machine: three starts, each after a
        // scan, and their medians compared. Memory is the first start's, before any planner ran here.
        var scans: [Double] = [], starts: [Double] = []
        var planner: InProcessService!
        var rss = 0.0
        for round in 0..<3 {
            if round > 0 { planner.stop() }
            scans.append(try time { try scanReminders(directory: directory) })
            let rssBefore = ProcessStatus.megabytes("VmRSS")
            starts.append(try time { planner = try startPlanner() })
            if round == 0 { rss = ProcessStatus.megabytes("VmRSS") - rssBefore }
        }
        defer { planner.stop() }
        let scanSeconds = LoadClients.percentile(scans, 0.5), startSeconds = LoadClients.percentile(starts, 0.5)
        let millions = Double(users * perUser) / 1_000_000
        func each(_ values: [Double]) -> String { values.map { String(format: "%.2f", $0) }.joined(separator: ", ") }
        print("start-up with \(users * perUser) reminders, three times (the median; each run in brackets)")
        print(String(format: "  bare SQL scan of the reminder rows  %6.2f s    (SQLite reading every column in place) [%@]", scanSeconds, each(scans)))
        print(String(format: "  planner ready                       %6.2f s    ratio %.2f × scan        target ≤ %.2f s (1 s per million): %@ [%@]",
                     startSeconds, startSeconds / scanSeconds, millions, verdict(startSeconds <= millions), each(starts)))
        print(String(format: "  resident memory added               %6.0f MB   ratio %.2f × database file (%.0f MB)   target ≤ %.0f MB (250 MB per million): %@",
                     rss, rss / databaseMegabytes, databaseMegabytes, 250 * millions, verdict(rss <= 250 * millions)))
        let apiStart = try startAfterAPILoad(context: context, logger: logger, users: users, perUser: perUser)
        print(String(format: "  after an api load / seeded start    %6.2f       target ≤ %.2f s (1 s per million): %@", apiStart / startSeconds, millions,
                     verdict(apiStart <= millions)))

        // Reminder times are spread evenly over the day, so this many minutes hold `burst` occurrences.
        let minutes = Int64((Double(burst) / Double(users * perUser) * 1440).rounded(.up))
        let client = ServiceClient(context: context, endpoint: planner.api)
        var decided = 0
        // Bytes this process sent to storage (`write_bytes`): the planner's, while it decides.
        var written = ProcessStatus.bytesWritten()
        let cpuBefore = ProcessStatus.cpuSecondsByThread()
        let burstSeconds = try time {
            decided = try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: minutes * 60), timeoutMilliseconds: 600_000).decided ?? 0
        }
        // The decision rows follow behind the log (SQLite: `PlannerStore.decisionProjection`); a read of them
        // waits until they hold every decision, and the bytes written count theirs too.
        let appliedSeconds = try burstSeconds + time {
            _ = try client.call(Ops.reminderUpcoming, UpcomingRequest(userId: UserID("u0")!, days: 1), timeoutMilliseconds: 60_000)
        }
        let burstBytes = ProcessStatus.bytesWritten() - written
        let cpu = ProcessStatus.cpuSecondsByThread().merging(cpuBefore.mapValues { -$0 }, uniquingKeysWith: +)
        let envelopeBytes = try ScratchDatabase.meanStoredEnvelopeBytes(database: directory + "/reminder-planner.sqlite", last: decided)
        let floorSeconds = try time { try insertFloor(rows: decided) }
        written = ProcessStatus.bytesWritten()
        let outboxFloorSeconds = try time { try insertFloor(rows: decided, envelopeBytes: envelopeBytes) }
        let floorBytes = ProcessStatus.bytesWritten() - written
        let eventFloorSeconds = try time { try insertFloor(rows: decided, decisionRows: false, envelopeBytes: envelopeBytes) }
        let rate = Double(decided) / burstSeconds, ratio = floorSeconds / burstSeconds
        print("burst: one clock.advance over \(minutes) minutes, \(activePercent) % of the users with covering sessions (--active)")
        print(String(format: "  bare INSERT of %d rows, one transaction  %9.0f rows/s", decided, Double(decided) / floorSeconds))
        print(String(format: "  the same, each with an outbox row of %d B %9.0f rows/s   ratio %.3f of bare INSERTs (the most a decision stored with its event can reach)",
                     envelopeBytes, Double(decided) / outboxFloorSeconds, floorSeconds / outboxFloorSeconds))
        print(String(format: "  the outbox rows alone                    %9.0f rows/s   (a decision's event, where its row follows behind the log: the most SQLite's deciding loop can reach)",
                     Double(decided) / eventFloorSeconds))
        print(String(format: "  planner decisions (with events)         %9.0f decisions/s   ratio %.3f of bare INSERTs, %.3f of them with outbox rows, %.3f of the outbox rows alone   target ≥ 150000/s and ≥ 0.5: %@",
                     rate, ratio, outboxFloorSeconds / burstSeconds, eventFloorSeconds / burstSeconds, verdict(rate >= 150_000 && ratio >= 0.5)))
        print(String(format: "  the same, until their rows are read back   %9.0f decisions/s   (a reminder.upcoming after the reply waits for the rows applied behind the log)",
                     Double(decided) / appliedSeconds))
        // By thread: the busiest is the planner's loop, the next its decisions' thread (the logger's
        // are idle meanwhile). On two cores, what they can give is bounded by the sum of all.
        func microseconds(_ seconds: Double) -> Double { seconds * 1e6 / Double(decided) }
        let busiest = cpu.values.filter { $0 > 0 }.sorted(by: >), total = busiest.reduce(0, +)
        print(String(format: "  CPU per decision, to the rows read back    busiest thread (the loop) %.1f µs, the next %.1f µs, all threads %.1f µs (two cores busy: at most %.0f decisions/s)",
                     microseconds(busiest.first ?? 0), microseconds(busiest.dropFirst().first ?? 0), microseconds(total), 2e6 / microseconds(total)))
        print(String(format: "  bytes written per decision              %9.0f B   ratio %.2f × the bare INSERTs with outbox rows (%.0f B a row)   target ≤ 3072 B: %@",
                     burstBytes / Double(decided), burstBytes / floorBytes, floorBytes / Double(decided), verdict(burstBytes / Double(decided) <= 3072)))

        try cancellationLatency(context: context, logger: logger, planner: planner, users: users, sessions: sessions)
        try scrape(metricsServer, prometheus, planner: planner, context: context, reminders: users * perUser)
    }

    /// The planner's flags in these benchmarks, in-process and for the executable alike: wildcard
    /// loopback ports, the clock manual at `clockStart`, following `logger`.
    static func plannerArguments(directory: String, logger: InProcessService) -> [String] {
        ["--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--data-dir", directory,
         "--clock", "manual:\(clockStart)", "--session-logger-api", logger.api, "--session-logger-events", logger.events]
    }

    /// A planner in-process on `directory` (`extra`: `--database` for PostgreSQL).
    static func startPlanner(context: Context, directory: String, logger: InProcessService, extra: [String] = []) throws -> InProcessService {
        // A million reminders take a while to load: the benchmark times it, so no harness deadline.
        try startService(context: context, timeout: 3600) { context in
            let options = try PlannerOptions.parse(plannerArguments(directory: directory, logger: logger) + extra)
            return try ReminderPlanner(settings: PlannerSettings(options), logger: Logger(label: "bench"), context: context)
        }
    }

    /// A Prometheus scrape of this process (planner and session logger in one registry) with the
    /// reminders loaded and decided: its size, rendering it, and fetching it over HTTP, beside a
    /// `health` round trip to the planner.
    static func scrape(_ server: MetricsServer, _ prometheus: PrometheusMetrics, planner: InProcessService, context: Context,
                       reminders: Int) throws {
        let text = prometheus.exposition()
        let series = text.split(separator: UInt8(ascii: "\n")).filter { $0.first != UInt8(ascii: "#") }.count
        var render: [Double] = []
        var http: [Double] = []
        var bytes = 0
        for _ in 0..<50 {
            var started = DispatchTime.now().uptimeNanoseconds
            _ = prometheus.exposition()
            render.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
            started = DispatchTime.now().uptimeNanoseconds
            bytes = try httpGet(host: "127.0.0.1", port: Int(server.address.split(separator: ":").last!)!, target: "/metrics").count
            http.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        }
        let client = ServiceClient(context: context, endpoint: planner.api)
        var health: [Double] = []
        for _ in 0..<50 {
            let started = DispatchTime.now().uptimeNanoseconds
            _ = try client.call(Ops.health, NoFields(), timeoutMilliseconds: 10_000)
            health.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        }
        print("metrics scrape with \(reminders) reminders loaded (\(series) series, \(bytes) bytes over HTTP)")
        print(String(format: "  health round trip (baseline)   p50 %6.3f ms   p99 %6.3f ms", LoadClients.percentile(health, 0.5), LoadClients.percentile(health, 0.99)))
        print(String(format: "  render the exposition          p50 %6.3f ms   p99 %6.3f ms", LoadClients.percentile(render, 0.5), LoadClients.percentile(render, 0.99)))
        print(String(format: "  GET /metrics over HTTP         p50 %6.3f ms   p99 %6.3f ms   target p99 < 100 ms: %@",
                     LoadClients.percentile(http, 0.5), LoadClients.percentile(http, 0.99), verdict(LoadClients.percentile(http, 0.99) < 100)))
    }
}
