import Foundation
import GRDB
import LHTSchema
import Logging
import ReminderPlanner
import ServiceHost
import SQLiteStorage
import Storage
import SessionLogger
import TestSupport
import ZeroMQ

/// `bench writes [--clients 8] [--window 64] [--per-client 5000] [--quick] [--only session.log|noalc.log|reminder.put|python]`
///
/// The acknowledged writes under pipelined load — `session.log`, `noalc.log` (session logger) and
/// `reminder.put` (planner) — each from `clients` DEALERs with `window` requests in flight: acks
/// per second and each ack's round trip, beside a raw ROUTER echo of the same frames measured in
/// the same run. Every request is distinct, so each is a real durable insert. session.log is also set
/// beside its bare stores and, where redis-server is installed, Redis XADD under the same load.
enum WritesBenchmark {
    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let clients = Options.int(arguments, "--clients", 8)
        let window = Options.int(arguments, "--window", 64)
        let perClient = Options.int(arguments, "--per-client", quick ? 1500 : 5000)
        let context = try Context()
        let loggerDirectory = temporaryDirectory("lht-bench").path
        let logger = try InProcessService.sessionLogger(context: context, directory: loggerDirectory)
        defer { logger.stop() }
        // The planner follows a logger of its own, idle: catching up on the logger under test would
        // share the cores with it and slow reminder.put.
        let upstream = try InProcessService.sessionLogger(context: context)
        defer { upstream.stop() }
        let planner = try InProcessService.planner(context: context, logger: upstream)
        defer { planner.stop() }
        let echo = LoadClients.startEcho(context: context)
        defer { echo.stop() }

        func measure(_ endpoint: String, _ frame: @escaping @Sendable (_ n: Int, _ client: Int) -> Data) -> LoadClients.Load {
            LoadClients.load(endpoint: endpoint, context: context, clients: clients, window: window) { client in
                (0..<perClient).map { frame($0, client) }
            }
        }
        let echoLoad = measure(echo.endpoint) { SessionLogBenchmark.sessionLog(n: $0, client: $1) }
        print("acknowledged writes, \(clients) pipelined DEALER clients × \(perClient) requests, \(window) in flight each")
        print(row("path", "acks/s", "× echo", "p50 ms", "p99 ms"))
        print(row("raw ROUTER echo", String(format: "%.0f", echoLoad.rate), "1.000", String(format: "%.3f", echoLoad.p50),
                  String(format: "%.3f", echoLoad.p99)))
        let cases: [(name: String, endpoint: String, frame: @Sendable (Int, Int) -> Data, meets: (LoadClients.Load, Double) -> Bool, target: String)] = [
            ("session.log", logger.api, { SessionLogBenchmark.sessionLog(n: $0, client: 100 + $1) },
             { load, ratio in load.rate >= 60_000 && ratio >= 0.25 }, "≥ 60000/s and ≥ 0.25 × echo"),
            ("noalc.log", logger.api, { noalcLog(n: $0, client: 200 + $1) },
             { load, ratio in load.rate >= 60_000 && ratio >= 0.25 }, "≥ 60000/s and ≥ 0.25 × echo"),
            ("reminder.put", planner.api, { reminderPut(n: $0, client: 300 + $1) },
             { load, _ in load.rate >= 20_000 && load.p99 <= 50 }, "≥ 20000/s, p99 ≤ 50 ms"),
        ]
        let only = arguments.firstIndex(of: "--only").flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
        for entry in cases where only == nil || only == entry.name {
            // The services run in this process, and only the one under load writes meanwhile.
            let writtenBefore = ProcessStatus.bytesWritten()
            let load = measure(entry.endpoint, entry.frame)
            let written = ProcessStatus.bytesWritten() - writtenBefore
            let ratio = load.rate / echoLoad.rate
            print(row(entry.name, String(format: "%.0f", load.rate), String(format: "%.3f", ratio), String(format: "%.3f", load.p50),
                      String(format: "%.3f", load.p99)))
            Target.report("\(entry.name) " + String(format: "%.0f acks/s, p99 %.3f ms", load.rate, load.p99), ratio: String(format: "%.3f × echo", ratio),
                          target: entry.target, met: entry.meets(load, ratio))
            print(String(format: "  bytes written to storage per acked request at full load: %.0f B (write_bytes of this process meanwhile)",
                         written / Double(clients * perClient)))
            if entry.name == "session.log" {
                let stored = try ScratchDatabase.meanEventFileRecordBytes(loggerDirectory + "/session-logger.events", records: clients * perClient)
                try compareWithStores(load.rate, rows: clients * perClient, envelopeBytes: stored)
                let xadd = try compareWithRedis(load.rate, clients: clients, window: window, perClient: perClient)
                compareWithDurableEcho(load.rate, xadd: xadd, context: context, measure: measure)
                compareWithReads(load.rate, endpoint: entry.endpoint, measure: measure)
            }
        }
        if only == nil || only == "python" { try python(echo: echo.endpoint, logger: logger.api, context: context, clients: clients, window: window, perClient: perClient) }
    }

    /// The session.log rate beside storing what it stores in SQLite alone: each request's session row
    /// and its `session.logged` event as an outbox row (`envelopeBytes`: the logger's mean record), as
    /// the logger did before its log became a file (`EventFileStore`),
    /// 512 a transaction (the logger's batch), through the statements the logger uses, with
    /// synchronous FULL (the logger's durability, each commit waiting for the disk) and OFF (no
    /// waiting: SQLite's own work).
    static func compareWithStores(_ rate: Double, rows: Int, envelopeBytes: Int) throws {
        let firstStart = Instant.now().adding(seconds: -3600)
        let envelope = Data(repeating: UInt8(ascii: "x"), count: envelopeBytes)
        for synchronous in ["FULL", "OFF"] {
            // The logger's migrations no longer create the session table: it moved to its projection's
            // file (SessionStore.projection). The floor keeps it, as it was, beside the outbox in one file.
            let took = try ScratchDatabase.with(synchronous: synchronous, migrations: SessionLogger.sqliteMigrations, schema: sessionTable) { database in
                try ContinuousClock().measure {
                    for batch in stride(from: 0, to: rows, by: ServiceHost.batchLimit) {
                        try database.write { db in
                            for seq in Int64(batch + 1)...Int64(min(batch + ServiceHost.batchLimit, rows)) {
                                let user = "bench\(seq % 50)", start = firstStart.adding(milliseconds: seq)
                                try insertSession(SessionLogRequest(id: RecordID(), userId: UserID(user)!, activity: .mindfulness,
                                                                    start: start, end: start.adding(seconds: 900)), seq: seq, in: db)
                                try RawStatement.execute("INSERT INTO outbox (seq, topic, envelope) VALUES (?, ?, ?)", db,
                                                         [.integer(seq), .text("session.logged.\(user).mindfulness"), .blob(envelope)])
                            }
                        }
                    }
                }
            }
            let floor = Double(rows) / (took / .seconds(1))
            print(row("  bare stores, synchronous=\(synchronous)", String(format: "%.0f", floor), "", "", "",
                      String(format: "session.log / this = %.3f (each a session row and a %d B outbox row, the logger's log as a table, %d a transaction)",
                             rate / floor, envelope.count, ServiceHost.batchLimit)))
        }
    }

    /// The logger's session table, as it was beside the outbox in one file (it moved to its projection's
    /// file, `SessionStore`): the floors' copy of it.
    static let sessionTable = """
        CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, start_ms INTEGER NOT NULL,
            end_ms INTEGER NOT NULL, source TEXT, logged_at_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
        CREATE INDEX session_by_user_start ON session (user_id, start_ms)
        """

    /// A session's row, through the statement the logger runs (`SessionStore.insert`).
    static func insertSession(_ session: SessionLogRequest, seq: Int64, in db: Database) throws {
        let start = session.start.millisecondsSince1970
        try RawStatement.execute("""
            INSERT INTO session (id, user_id, activity, start_ms, end_ms, source, logged_at_ms, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING
            """, db, [.text((session.id ?? RecordID()).description), .text(session.userId.rawValue), .text(session.activity.rawValue),
                      .integer(start), .integer(session.end.millisecondsSince1970), .text(session.source), .integer(start), .integer(seq)])
    }

    /// The session.log rate beside Redis XADD (`RedisAnchor`): the same clients, window and count, each
    /// XADD carrying a session.log request frame as its field, appended and fsynced before the reply.
    /// Returns the XADD rate; nil without redis-server.
    static func compareWithRedis(_ rate: Double, clients: Int, window: Int, perClient: Int) throws -> Double? {
        guard let redis = try RedisAnchor.xaddRate(clients: clients, window: window, fields: { client in
            (0..<perClient).map { SessionLogBenchmark.sessionLog(n: $0, client: 400 + client) }
        }) else { return nil }
        let ratio = rate / redis
        print(row("  redis XADD", String(format: "%.0f", redis)),
              "(appendfsync always, a \(SessionLogBenchmark.sessionLog(n: 0, client: 400).count) B field each)")
        Target.report(String(format: "session.log %.0f acks/s", rate), ratio: String(format: "%.3f × Redis XADD", ratio), target: "≥ 0.5 × XADD",
                      met: ratio >= 0.5)
        return redis
    }

    /// The session.log rate beside the durable echo (`LoadClients.startEcho(log:)`): the same frames
    /// from the same clients, each appended to a file and synced before its reply, as a log of the
    /// service's own would store it, with no database beside it; and beside XADD, when measured.
    static func compareWithDurableEcho(_ rate: Double, xadd: Double?, context: Context,
                                       measure: (String, @escaping @Sendable (Int, Int) -> Data) -> LoadClients.Load) {
        func ratios(_ floor: Double) -> String {
            String(format: "session.log / this = %.3f", rate / floor) + (xadd.map { String(format: "; this / XADD = %.3f", floor / $0) } ?? "")
        }
        let directory = temporaryDirectory("lht-durable-echo")
        let echo = LoadClients.startEcho(context: context, log: directory.appendingPathComponent("log").path)
        let load = measure(echo.endpoint) { SessionLogBenchmark.sessionLog(n: $0, client: 500 + $1) }
        echo.stop()
        print(row("  durable echo", String(format: "%.0f", load.rate), "", String(format: "%.3f", load.p50), String(format: "%.3f", load.p99),
                  ratios(load.rate) + " (each frame appended to a file, fdatasync per batch read, then the replies)"))
        // The design whole: the same, with the session rows applied behind it. It sustains the lower
        // of the two rates: acks, and rows applied.
        do {
            let (load, appliedRate) = try underEchoWithProjection(context: context, in: directory.appendingPathComponent("with-projection")) { endpoint in
                measure(endpoint) { SessionLogBenchmark.sessionLog(n: $0, client: 600 + $1) }
            }
            let sustained = min(load.rate, appliedRate)
            print(row("  + projection", String(format: "%.0f", sustained), "", String(format: "%.3f", load.p50), String(format: "%.3f", load.p99),
                      ratios(sustained) + String(format: " (acks %.0f/s, rows applied %.0f/s on a thread of their own: the floor of a file log with its projection applied behind it)",
                                                 load.rate, appliedRate)))
        } catch {
            print("  + projection: \(error)")
        }
    }

    /// The same pipelined load from Python clients (pyzmq, one process each: `python/load.py`), against
    /// the echo and `session.log`, alternating; and against the floor of the design, the durable echo with
    /// its projection applied behind it (`compareWithDurableEcho`), where the Python processes share the
    /// cores with that floor instead of the logger. Skipped when python3 has no pyzmq.
    static func python(echo: String, logger: String, context: Context, clients: Int, window: Int, perClient: Int) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("python/load.py").path
        guard (try? ZeroMQPubSub.execute("/usr/bin/env", ["python3", "-c", "import zmq"]).0) == 0 else {
            return print("python clients: skipped (python3 with pyzmq not found; deploy/install-prerequisites --python installs it)")
        }
        func rate(_ endpoint: String, salt: Int) throws -> Double {
            let (status, output, errors) = try ZeroMQPubSub.execute("/usr/bin/env", [
                "python3", script, endpoint, "\(clients)", "\(window)", "\(perClient)", "session.log", "\(salt)"])
            guard status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("rate=") }), let value = Double(line.dropFirst(5)) else {
                throw BenchError("python load client failed (\(status)): \(errors)")
            }
            return value
        }
        /// The floor's rate: the lower of its acks and its rows applied, each round with a log and projection of its own.
        func floorRate(salt: Int) throws -> Double {
            let (acks, appliedRate) = try underEchoWithProjection(context: context, in: temporaryDirectory("lht-python-floor")) { try rate($0, salt: salt) }
            return min(acks, appliedRate)
        }
        var echoRates: [Double] = [], logRates: [Double] = [], floorRates: [Double] = []
        for round in 0..<2 {
            echoRates.append(try rate(echo, salt: round))
            logRates.append(try rate(logger, salt: round))
            floorRates.append(try floorRate(salt: round))
        }
        func mean(_ rates: [Double]) -> Double { rates.reduce(0, +) / Double(rates.count) }
        let ratio = mean(logRates) / mean(echoRates), floorRatio = mean(floorRates) / mean(echoRates)
        print(String(format: "python clients (%d processes × %d in flight): echo %.0f/s, session.log %.0f/s", clients, window, mean(echoRates), mean(logRates)))
        Target.report(String(format: "session.log from Python clients %.0f/s", mean(logRates)), ratio: String(format: "%.3f × echo", ratio),
                      target: "≥ 0.6 × echo", met: ratio >= 0.6)
        print(String(format: "  the floor, durable echo + projection, from the same clients: %.0f/s = %.3f × echo; session.log / this = %.3f",
                     mean(floorRates), floorRatio, mean(logRates) / mean(floorRates)))
    }

    /// `load` against the durable echo with the session rows applied behind it (`EchoProjection`),
    /// its log and projection in `directory`: what `load` returns, and the rate the rows were applied at.
    static func underEchoWithProjection<Result>(context: Context, in directory: URL, _ load: (_ endpoint: String) throws -> Result) throws
        -> (result: Result, appliedRate: Double) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let projection = try EchoProjection(path: directory.appendingPathComponent("projection.sqlite").path)
        let echo = LoadClients.startEcho(context: context, log: directory.appendingPathComponent("log").path, projection: projection)
        let result = try load(echo.endpoint)
        echo.stop()
        projection.finish()
        return (result, projection.appliedRate)
    }

    /// The session.log rate beside the same load with one request in 33 a `session.list` of a few
    /// sessions (the soak's share of reads at the logger): each read runs behind the log, at its point
    /// in it, on the projection's thread (docs/storage.md, the session logger's log as a file).
    static func compareWithReads(_ rate: Double, endpoint: String, measure: (String, @escaping @Sendable (Int, Int) -> Data) -> LoadClients.Load) {
        let load = measure(endpoint) { n, client in
            guard n % 33 == 32 else { return SessionLogBenchmark.sessionLog(n: n, client: 700 + client) }
            // The sessions of this client's user that started in one minute an hour ago: a few of them.
            let now = Instant.now()
            return LoadClients.frame(Ops.sessionList, SessionListRequest(userId: UserID("bench\((700 + client) % 50)")!,
                                                                         from: now.adding(seconds: -76 * 60), until: now.adding(seconds: -75 * 60)))
        }
        print(row("  + reads", String(format: "%.0f", load.rate), "", String(format: "%.3f", load.p50), String(format: "%.3f", load.p99),
                  String(format: "this / session.log = %.3f (1 request in 33 a session.list, each read behind the log)",
                         load.rate / rate)))
    }

    static func row(_ columns: String...) -> String {
        zip(columns, [16, 10, 8, 9, 9, 0]).map { $0.padding(toLength: max($1, $0.count), withPad: " ", startingAt: 0) }.joined(separator: " ")
    }

    /// Days spread over the last eight years, each entry its own id.
    static func noalcLog(n: Int, client: Int) -> Data {
        let today = Instant.now().local(in: ZoneID.utc).day
        return LoadClients.frame(Ops.noalcLog, NoAlcLogRequest(id: RecordID(LoadClients.uuid(n, client: client))!, userId: UserID("bench\(client % 50)")!,
                                                               day: today.adding(days: -(n % 3000)), level: NoAlcLevel.allCases[n % 3]))
    }

    /// A new reminder each, for one of a thousand users per client, at times spread over the day.
    static func reminderPut(n: Int, client: Int) -> Data {
        LoadClients.frame(Ops.reminderPut, ReminderPutRequest(
            id: RecordID(LoadClients.uuid(n, client: client))!, userId: UserID("bench\(client)-\(n % 1000)")!,
            activity: n % 2 == 0 ? .workout : .mindfulness, time: LocalTime(hour: n / 60 % 24, minute: n % 60)))
    }
}

extension InProcessService {
    /// A planner following `logger`, on wildcard loopback ports and a fresh data directory; on the
    /// system clock, or a manual one starting at `clock`.
    static func planner(context: Context, logger: InProcessService, clock: Instant? = nil) throws -> InProcessService {
        let directory = temporaryDirectory("lht-bench-planner").path
        return try startService(context: context) { context in
            let options = try PlannerOptions.parse(["--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--data-dir", directory,
                                                    "--session-logger-api", logger.api, "--session-logger-events", logger.events]
                                                   + (clock.map { ["--clock", "manual:\($0)"] } ?? []))
            return try ReminderPlanner(settings: PlannerSettings(options), logger: Logger(label: "bench"), context: context)
        }
    }
}
