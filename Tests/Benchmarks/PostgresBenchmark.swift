import Foundation
import PostgresStorage
import Synchronization
import TestSupport
import ZeroMQ

/// `bench postgres [--clients 8] [--window 64] [--seconds 5] [--rounds 2] [--quick]`
///
/// The session logger on PostgreSQL (`--database`) beside pgbench on the same server: acked
/// `session.log`/s from `clients` DEALERs × `window` in flight for `seconds`, and pgbench's
/// transactions/s from as many connections for as long, each transaction storing what the logger
/// stores for one request. The logger batches a transaction's requests and pgbench does not, so
/// the logger should be at least as fast: target ≥ 1.0. Rounds alternate, the logger first (pgbench's
/// record is read back from the logger's log).
enum PostgresBenchmark {
    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let clients = Options.int(arguments, "--clients", 8)
        let window = Options.int(arguments, "--window", 64)
        let seconds = Options.int(arguments, "--seconds", quick ? 2 : 5)  // pgbench -T takes whole seconds
        let rounds = Options.int(arguments, "--rounds", quick ? 1 : 2)
        guard let binaries = try? TestPostgres.binaries(), FileManager.default.isExecutableFile(atPath: binaries + "/pgbench") else {
            return print("postgres: skipped (no PostgreSQL server with pgbench in /usr/lib/postgresql/<version>/bin; "
                         + "deploy/install-prerequisites --bench installs it)")
        }
        // Its own server: a temporary cluster on a free loopback port, fsync and synchronous_commit on.
        let server = try TestPostgres()
        defer { server.stop() }
        let admin = try server.connect()
        let memory = ServerMemory(postmaster: try parentPID(of: admin.backendPID))
        let context = try Context()
        let logger = try InProcessService.sessionLogger(context: context, extra: ["--database", server.url])
        defer { logger.stop() }

        var logged: [LoadClients.Load] = [], benched: [(tps: Double, latency: Double)] = []
        var script: (text: String, envelopeBytes: Int)?
        for round in 0..<rounds {
            // Each round's clients are new ones, so every request is a new session, never a repeat.
            let frames = (0..<clients).map { sessionLogFrames(client: 500 + clients * round + $0) }
            logged.append(LoadClients.load(endpoint: logger.api, context: context, clients: clients, window: window,
                                           seconds: Double(seconds)) { n, client in frames[client](n) })
            script = try script ?? pgbenchScript(copying: admin)
            benched.append(try pgbench(binaries, script: script!.text, port: server.port, clients: clients, seconds: seconds))
        }
        let serverPeak = memory.stop()

        print("session.log on PostgreSQL \(binaries.split(separator: "/").dropLast().last ?? "?") (fsync on, synchronous_commit on) "
              + "beside pgbench on the same server, \(seconds) s each, \(rounds) round(s), alternating")
        print("  session.log: \(clients) pipelined DEALER clients, \(window) in flight each, acked (committed) requests/s, many requests a transaction")
        print("  pgbench: -c \(clients) -j 2 -M prepared, transactions/s (without initial connection time), each what the logger stores for one")
        print("    request: its log row moved (held to COMMIT), the session row, the log record (a real \(script?.envelopeBytes ?? 0) B envelope, copied), "
              + "in tables LIKE the logger's")
        for (index, (log, bench)) in zip(logged, benched).enumerated() {
            print(String(format: "  round %d   session.log %8.0f acks/s (p50 %.2f ms, p99 %.2f ms)   pgbench %8.0f tps (latency average %.2f ms)   ratio %.3f",
                         index + 1, log.rate, log.p50, log.p99, bench.tps, bench.latency, log.rate / bench.tps))
        }
        let ratio = logged.map(\.rate).reduce(0, +) / benched.map(\.tps).reduce(0, +)
        Target.report(String(format: "session.log on PostgreSQL %.0f acks/s (mean of the rounds)", logged.map(\.rate).reduce(0, +) / Double(logged.count)),
                      ratio: String(format: "%.3f × pgbench (all rounds)", ratio), target: "≥ 1.0 × pgbench", met: ratio >= 1)
        print(String(format: "peak memory of the PostgreSQL server: %.0f MB (the PSS of its %d processes summed, at its largest sample, every 250 ms)",
                     serverPeak.megabytes, serverPeak.processes))
        print("  bench's own peak below is the session logger's process: the logger, its clients and this bench")
    }

    /// Client `client`'s session.log request n: its request 0 with n written into the id's last 12
    /// digits. A copy, not an encoding, since the clients make their requests while the clock runs.
    static func sessionLogFrames(client: Int) -> @Sendable (Int) -> Data {
        let template = SessionLogBenchmark.sessionLog(n: 0, client: client)
        guard let id = template.range(of: Data(LoadClients.uuid(0, client: client).utf8)) else { fatalError("no id in the session.log frame") }
        let digits = id.suffix(12)
        return { n in
            var frame = template, rest = n
            for index in digits.reversed() {
                frame[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return frame
        }
    }

    /// pgbench's script, and its tables made beside the logger's (which must exist: the logger has
    /// logged): `pgbench_anchor.session`, `.log` and `.log_head` LIKE the logger's, with their keys
    /// and indexes, and a counter row. Per transaction it does what the logger does per request,
    /// without the batch: moves the counter (its row lock held to COMMIT, as the logger holds its
    /// log row's), inserts the session row and the log record at that seq. The record's topic,
    /// envelope and times are a real one's, read back from the logger's log; the ids look like the
    /// clients' (a per-client prefix, a number).
    static func pgbenchScript(copying connection: PostgresConnection) throws -> (text: String, envelopeBytes: Int) {
        for statement in [
            "CREATE SCHEMA pgbench_anchor",
            "CREATE TABLE pgbench_anchor.session (LIKE session_logger.session INCLUDING ALL)",
            "CREATE TABLE pgbench_anchor.log (LIKE session_logger.log INCLUDING ALL)",
            "CREATE TABLE pgbench_anchor.log_head (LIKE session_logger.log_head INCLUDING ALL)",
            "INSERT INTO pgbench_anchor.log_head (service, last_seq) VALUES ('pgbench', 0)",
        ] { try connection.execute(statement) }
        guard let record = try connection.execute("""
            SELECT l.topic, l.envelope, s.start_ms, s.end_ms, s.logged_at_ms
            FROM session_logger.log AS l JOIN session_logger.session AS s USING (seq) ORDER BY seq LIMIT 1
            """).first, let topic = record.text(0), let envelope = record.bytes(1),
              let start = record.int64(2), let end = record.int64(3), let loggedAt = record.int64(4)
        else { throw BenchError("the session logger logged nothing to copy") }
        // With -M prepared each statement is parsed once; the envelope is a literal of the same bytes.
        let text = """
            BEGIN;
            UPDATE pgbench_anchor.log_head SET last_seq = last_seq + 1 WHERE service = 'pgbench' RETURNING last_seq \\gset
            INSERT INTO pgbench_anchor.session (id, user_id, activity, start_ms, end_ms, source, logged_at_ms, seq) VALUES (\
            lpad(to_hex(CAST(:client_id AS int) + 1000), 8, '0') || '-0000-4000-8000-' || lpad(CAST(:last_seq AS text), 12, '0'), \
            'bench' || CAST(:client_id AS text), 'mindfulness', \(start), \(end), NULL, \(loggedAt), :last_seq) ON CONFLICT (id) DO NOTHING;
            INSERT INTO pgbench_anchor.log (seq, topic, envelope) VALUES (:last_seq, '\(topic)', '\\x\(envelope.map { String(format: "%02x", $0) }.joined())');
            END;

            """
        return (text, envelope.count)
    }

    /// pgbench's tps (without initial connection time) and latency average (ms) for `script`.
    static func pgbench(_ binaries: String, script: String, port: Int, clients: Int, seconds: Int) throws -> (tps: Double, latency: Double) {
        let file = temporaryDirectory("lht-bench-pgbench").appendingPathComponent("session-log.sql")
        try script.write(to: file, atomically: false, encoding: .utf8)
        let run = try CapturedProcess(binaries + "/pgbench", [
            "-n", "-f", file.path, "-c", "\(clients)", "-j", "2", "-T", "\(seconds)", "-M", "prepared",
            "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "postgres",
        ]).finish(timeout: Double(seconds) + 60)
        func number(after prefix: String, on marker: String) -> Double? {
            run.stdout.split(separator: "\n").first { $0.hasPrefix(prefix) && $0.contains(marker) }
                .flatMap { Double($0.dropFirst(prefix.count).prefix { !$0.isWhitespace }) }
        }
        guard run.status == 0, let tps = number(after: "tps = ", on: "without initial connection time"),
              let latency = number(after: "latency average = ", on: "ms") else {
            throw BenchError("pgbench failed (\(run.status)): \(run.stdout) \(run.stderr)")
        }
        return (tps, latency)
    }

    /// The postmaster and all the server's other processes, now.
    static func serverProcesses(postmaster: Int32) -> [Int32] {
        // The postmaster has one thread, whose `children` are all the server's other processes.
        let children = (try? String(contentsOfFile: "/proc/\(postmaster)/task/\(postmaster)/children", encoding: .utf8)) ?? ""
        return [postmaster] + children.split(separator: " ").compactMap { Int32($0) }
    }

    /// The postmaster, found as the parent of a backend (`pg_backend_pid`) of ours.
    static func parentPID(of pid: Int32) throws -> Int32 {
        // The field after the command, which is in parentheses and may hold spaces: state, then ppid.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")"), let parent = stat[stat.index(after: close)...].split(separator: " ").dropFirst().first.flatMap({ Int32($0) })
        else { throw BenchError("cannot read the parent of process \(pid)") }
        return parent
    }
}

/// The peak memory of a PostgreSQL server: the postmaster and its children (a backend per
/// connection, the WAL writer, the checkpointer…), sampled every 250 ms on a thread of its own
/// until `stop()`. Their PSS summed, not their RSS: each process maps shared_buffers, which RSS
/// would count once per process; PSS shares it out. The backends come and go with pgbench's
/// connections, hence sampling rather than reading each one's VmHWM at the end.
final class ServerMemory: Sendable {
    private let peak = Mutex<(megabytes: Double, processes: Int)>((0, 0))
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(postmaster: Int32) {
        Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                let pids = PostgresBenchmark.serverProcesses(postmaster: postmaster).map(String.init)
                let total = pids.map { Self.pss(of: $0) }.reduce(0, +)
                peak.withLock { if total > $0.megabytes { $0 = (total, pids.count) } }
                Thread.sleep(forTimeInterval: 0.25)
            }
            finished.signal()
        }.start()
    }

    /// Stops sampling; the largest sum seen (MB) and how many processes it summed.
    func stop() -> (megabytes: Double, processes: Int) {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
        return peak.withLock { $0 }
    }

    /// A process's proportional set size in MB (0 once it has gone).
    static func pss(of pid: String) -> Double {
        guard let rollup = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8),
              let line = rollup.split(separator: "\n").first(where: { $0.hasPrefix("Pss:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes / 1024
    }
}
