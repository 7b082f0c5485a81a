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

        // The box is noisy (one run's scan took 0.30 s, another's 0.47): three starts, each after a
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

    /// Reminder k of user u: at minute (u·perUser + k) mod 1440 every day, mindfulness and workout by turns.
    static func seededRule(user: Int, k: Int, perUser: Int) -> StoredRule {
        let minute = (user * perUser + k) % 1440
        return StoredRule(activity: k % 2 == 0 ? .mindfulness : .workout, time: LocalTime(hour: minute / 60, minute: minute % 60)!,
                          weekdays: WeekdayMask(bits: 127), lookbackHours: 12, enabled: true)
    }

    static let seededCreatedMs = clockStart.adding(seconds: -86_400).millisecondsSince1970

    /// Users in Europe/Berlin, each with `perUser` reminders (`seededRule`); `activePercent` of
    /// them with a session of each activity two hours before `clockStart`, 20 minutes long, in the
    /// 12-hour windows of the burst's occurrences. Stored as the planner stores what it follows (the
    /// copy, and its user's latest session end), at seqs below any the logger gives.
    static func seed(directory: String, users: Int, perUser: Int, activePercent: Int = 0) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let database = try DatabaseQueue(path: directory + "/reminder-planner.sqlite", configuration: configuration)
        try database.write { db in
            for user in 0..<users {
                try db.run("INSERT INTO user (user_id, time_zone, locale, paused) VALUES (?, 'Europe/Berlin', 'en', 0)", arguments: ["u\(user)"])
                for k in 0..<perUser {
                    try db.run("INSERT INTO reminder (id, user_id, rule, title, body, created_at_ms) VALUES (?, ?, ?, NULL, NULL, ?)",
                               arguments: [RecordID().bytes, "u\(user)", seededRule(user: user, k: k, perUser: perUser).bits, seededCreatedMs])
                }
            }
            // Every partition decided through the clock's start (the planner's start made the rows).
            for partition in 0..<Ownership.partitionCount {
                try db.run("""
                    INSERT INTO decided_through (partition_index, at_ms) VALUES (?, ?)
                    ON CONFLICT (partition_index) DO UPDATE SET at_ms = excluded.at_ms
                    """, arguments: [partition, clockStart.millisecondsSince1970])
            }
        }
        // Copied into the file, as a running planner's checkpointer would have: the scan below and
        // the start both read the file, not a log of the whole seed.
        try database.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        guard activePercent > 0 else { return }
        // The copies of the logger's sessions are in the projection file (closed cleanly by the planner that made it).
        try DatabaseQueue(path: directory + "/reminder-planner.projection.sqlite", configuration: configuration).write { db in
            for user in 0..<users where user % 100 < activePercent {
                for (n, activity) in [Activity.mindfulness, .workout].enumerated() {
                    let start = clockStart.adding(seconds: Int64(-2 * 3600 + n * 1800))
                    let end = start.adding(seconds: 1200).millisecondsSince1970
                    try db.run("INSERT INTO session (id, user_id, activity, start_ms, end_ms, seq) VALUES (?, ?, ?, ?, ?, ?)",
                               arguments: [RecordID().description, "u\(user)", activity.rawValue, start.millisecondsSince1970, end, -(2 * user + n + 1)])
                    try db.run("INSERT INTO latest_session_end (user_id, activity, end_ms) VALUES (?, ?, ?)",
                               arguments: ["u\(user)", activity.rawValue, end])
                }
            }
        }
    }

    /// SQLite stepping through the planner's query and reading every column in place, each text's
    /// and blob's bytes summed: what loading costs before anything is parsed or kept. (GRDB's `Row.fetchAll`
    /// took four times as long, mostly building rows, which made a generous baseline.)
    static func scanReminders(directory: String) throws {
        let database = try DatabaseQueue(path: directory + "/reminder-planner.sqlite")
        var checksum = 0
        try database.read { db in
            _ = try RawStatement.run("""
                SELECT id, user_id, rule, title, body, created_at_ms FROM reminder
                """, db, []) { row -> Void? in
                checksum &+= row.blob(0).reduce(0) { $0 &+ Int($1) }
                for column: Int32 in [1, 3, 4] { checksum &+= row.bytes(column).reduce(0) { $0 &+ Int($1) } }
                checksum &+= Int(row.integer(2) &+ row.integer(5))
                return nil
            }
        }
        precondition(checksum != 0, "no reminder rows were read")
    }

    /// The persistence floor: as many rows as decisions, one transaction, synchronous=FULL like the
    /// services. With `envelopeBytes`, each row also gets an outbox row of that size in the same
    /// transaction, as every decision stores its event (PROTOCOL "Events": stored, then published);
    /// without `decisionRows`, the outbox rows alone.
    static func insertFloor(rows: Int, decisionRows: Bool = true, envelopeBytes: Int? = nil) throws {
        let schema = "CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, PRIMARY KEY (reminder_id, at_ms))"
        let envelope = envelopeBytes.map { Data(repeating: UInt8(ascii: "x"), count: $0) }
        try ScratchDatabase.with(schema: schema) { database in
            try database.write { db in
                for n in 0..<rows {
                    if decisionRows { try db.run("INSERT INTO decision VALUES (?, ?, 'fired')", arguments: [RecordID().description, n]) }
                    if let envelope {
                        try db.run("INSERT INTO outbox VALUES (?, ?, ?)", arguments: [n + 1, "reminder.due.u\(n % 100_000).mindfulness", envelope])
                    }
                }
            }
        }
    }

    static func cancellationLatency(context: Context, logger: InProcessService, planner: InProcessService, users: Int, sessions: Int) throws {
        let (ack, _, cancel) = try cancellations(context: context, logger: logger, planner: planner, users: users, sessions: sessions)
        let commit = try SessionLogBenchmark.commitLatencies(count: max(sessions, 1000))
        print("covering session → reminder.cancelled (\(cancel.count)/\(sessions) observed)")
        print(String(format: "  session.log ack round trip      p50 %6.3f ms   p99 %6.3f ms", LoadClients.percentile(ack, 0.5), LoadClients.percentile(ack, 0.99)))
        print(String(format: "  baseline: bare one-row commit   p50 %6.3f ms   p99 %6.3f ms   (synchronous=FULL)",
                     LoadClients.percentile(commit, 0.5), LoadClients.percentile(commit, 0.99)))
        let p50 = LoadClients.percentile(cancel, 0.5), p99 = LoadClients.percentile(cancel, 0.99)
        print(String(format: "  ack → reminder.cancelled        p50 %6.3f ms   p99 %6.3f ms   ratio p99 %.1f × ack p99, %.1f × commit p99",
                     p50, p99, p99 / LoadClients.percentile(ack, 0.99), p99 / LoadClients.percentile(commit, 0.99)))
        // #30 restates the target as p50 ≤ 0.5 ms; the issue before it asked 0.4 ms, which is kept in view.
        print("  target p50 ≤ 0.5 ms, p99 ≤ 1 ms: \(verdict(p50 <= 0.5 && p99 <= 1)); with p50 ≤ 0.4 ms: \(verdict(p50 <= 0.4 && p99 <= 1))")
    }

    /// Sessions for users whose reminders are still ahead of the clock: each one covers an undecided
    /// occurrence. Per session (ms): its session.log ack round trip; from the ack to the logger's
    /// `session.logged` for the user, which the planner reacts to (the logger's share of what
    /// follows); and from the ack to the planner's first `reminder.cancelled` for the user. A
    /// session whose announcement never came has no figure.
    static func cancellations(context: Context, logger: InProcessService, planner: InProcessService, users: Int,
                              sessions: Int, firstUser: Int? = nil) throws -> (ack: [Double], logged: [Double], cancel: [Double]) {
        func subscriber(_ endpoint: String, _ event: String) throws -> Socket {
            let socket = try Socket(context, .sub)
            try socket.subscribe(event + ".")
            try socket.connect(endpoint)
            try socket.setReceiveTimeout(milliseconds: 2000)
            return socket
        }
        let loggedEvents = try subscriber(logger.events, Events.sessionLogged.name)
        let cancelledEvents = try subscriber(planner.events, Events.reminderCancelled.name)
        /// Milliseconds from `acked` to the first event on `socket` whose topic starts with `prefix`.
        func first(_ socket: Socket, _ prefix: String, after acked: UInt64) throws -> Double? {
            while let frames = try socket.receiveMultipart() {
                if String(decoding: frames[0], as: UTF8.self).hasPrefix(prefix) { return Double(DispatchTime.now().uptimeNanoseconds - acked) / 1_000_000 }
            }
            return nil
        }
        let loggerClient = ServiceClient(context: context, endpoint: logger.api)
        Thread.sleep(forTimeInterval: 0.3)
        var ack: [Double] = [], logged: [Double] = [], cancel: [Double] = []
        let now = Instant.now()
        for n in 0..<sessions {
            let user = UserID("u\(((firstUser ?? users / 2) + n) % users)")!
            // 20 hours long and ending an hour ago: with a 12-hour look-back it overlaps every daily time.
            let end = now.adding(seconds: -Int64(3600 + n))
            let request = SessionLogRequest(userId: user, activity: .mindfulness, start: end.adding(seconds: -20 * 3600), end: end)
            let sent = DispatchTime.now().uptimeNanoseconds
            guard (try? loggerClient.call(Ops.sessionLog, request, timeoutMilliseconds: 5000)) != nil else { continue }
            let acked = DispatchTime.now().uptimeNanoseconds
            ack.append(Double(acked - sent) / 1_000_000)
            // The logger publishes before the planner can react, so waiting for it first delays neither reading.
            try first(loggedEvents, Events.sessionLogged.prefix(userId: user), after: acked).map { logged.append($0) }
            // The first announcement for this user marks the planner's reaction.
            try first(cancelledEvents, Events.reminderCancelled.prefix(userId: user), after: acked).map { cancel.append($0) }
            // Later announcements of this session (other covered occurrences) are drained before the next.
            while (try? cancelledEvents.receiveMultipart(dontWait: true)) ?? nil != nil {}
        }
        return (ack, logged, cancel)
    }

    static func time(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000_000
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    static func verdict(_ met: Bool) -> String { met ? "met" : "NOT met" }
}
