import Foundation
import GRDB
import LHTSchema
import Logging
import ServiceHost
import Storage
import SessionLogger
import Synchronization
import TestSupport
import ZeroMQ

/// `bench session-log [--clients 8] [--per-client 5000] [--rate 1000] [--seconds 5] [--metrics-rounds 3] [--start-events 1000000] [--quick]`
/// (`--memory`: the logger's resident memory as its log grows, `SessionLogMemoryBenchmark`)
///
/// Acknowledged, durable `session.log` throughput with pipelined DEALER clients, and ack latency at
/// a fixed rate, each beside a raw ROUTER echo measured in the same run on the same sockets; then
/// the start with a long log (`startWithLog`).
enum SessionLogBenchmark {
    static func run(_ arguments: [String]) throws {
        if arguments.contains("--memory") { return try memory(arguments) }
        let quick = arguments.contains("--quick")
        let clients = Options.int(arguments, "--clients", 8)
        let perClient = Options.int(arguments, "--per-client", quick ? 1500 : 5000)
        let rate = Double(Options.int(arguments, "--rate", 1000))
        let seconds = Options.int(arguments, "--seconds", quick ? 2 : 5)
        let context = try Context()
        let service = try InProcessService.sessionLogger(context: context)
        defer { service.stop() }
        let echo = LoadClients.startEcho(context: context)
        defer { echo.stop() }

        // Every request is distinct (its own id), so each is a real insert, never a duplicate.
        let sessionFrames: @Sendable (Int) -> [Data] = { client in (0..<perClient).map { sessionLog(n: $0, client: client + 1) } }
        let echoRate = LoadClients.throughput(endpoint: echo.endpoint, context: context, clients: clients, window: 64, frames: sessionFrames)
        let logRate = LoadClients.throughput(endpoint: service.api, context: context, clients: clients, window: 64) { client in
            (0..<perClient).map { sessionLog(n: $0, client: client + 100) }
        }
        print("throughput, \(clients) pipelined DEALER clients × \(perClient) requests")
        print(String(format: "  raw ROUTER echo        %9.0f replies/s", echoRate))
        Target.report(String(format: "session.log (durable) %.0f acks/s", logRate), ratio: String(format: "%.3f × echo", logRate / echoRate),
                      target: "≥ 20000/s", met: logRate >= 20_000)

        let count = Int(rate) * seconds
        let echoLatency = LoadClients.latencies(endpoint: echo.endpoint, context: context, rate: rate, count: count) { sessionLog(n: $0, client: 7000) }
        let logLatency = LoadClients.latencies(endpoint: service.api, context: context, rate: rate, count: count) { sessionLog(n: $0, client: 9000) }
        let commitLatency = try commitLatencies(count: min(count, 2000))
        print("ack latency at \(Int(rate)) requests/s for \(seconds) s (\(logLatency.count)/\(count) answered)")
        for (name, values) in [("raw ROUTER echo", echoLatency), ("bare SQLite commit", commitLatency), ("session.log", logLatency)] {
            print(String(format: "  %-22@ p50 %6.3f ms   p99 %6.3f ms   max %6.3f ms", name as NSString,
                         LoadClients.percentile(values, 0.5), LoadClients.percentile(values, 0.99), values.max() ?? .nan))
        }
        let p99 = LoadClients.percentile(logLatency, 0.99)
        Target.report(String(format: "session.log ack p99 %.3f ms at %.0f/s", p99, rate),
                      ratio: String(format: "%.1f × bare commit p99", p99 / LoadClients.percentile(commitLatency, 0.99)), target: "p99 < 5 ms", met: p99 < 5)

        try metricsOnVersusOff(context: context, off: service, clients: clients, perClient: perClient,
                               rounds: Options.int(arguments, "--metrics-rounds", quick ? 1 : 3))
        try startWithLog(context: context, events: Options.int(arguments, "--start-events", quick ? 100_000 : 1_000_000), clients: clients)
    }

    /// A logger started on a log of `events` sessions: after a clean stop (the records' offsets from the
    /// index the stop saved), and without that index, as after a `kill -9` (the file read and every
    /// record checked); beside reading the file alone, in the same run. The page cache holds the file
    /// in all three.
    static func startWithLog(context: Context, events: Int, clients: Int) throws {
        let directory = temporaryDirectory("lht-bench-start").path
        let file = directory + "/session-logger.events"
        var service = try InProcessService.sessionLogger(context: context, directory: directory)
        _ = LoadClients.throughput(endpoint: service.api, context: context, clients: clients, window: 64) { client in
            (0..<events / clients).map { sessionLog(n: $0, client: 40_000 + client) }
        }
        service.stop()
        func seconds(_ body: () throws -> Void) rethrows -> Double { try ContinuousClock().measure(body) / .seconds(1) }
        let read = try seconds {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: file))
            defer { try? handle.close() }
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {}
        }
        let fromIndex = try seconds { service = try InProcessService.sessionLogger(context: context, directory: directory) }
        service.stop()
        try FileManager.default.removeItem(atPath: file + ".index")
        let checked = try seconds { service = try InProcessService.sessionLogger(context: context, directory: directory) }
        service.stop()
        let megabytes = Double((try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) / 1_048_576
        print("start with \(events / clients * clients) logged sessions (\(String(format: "%.0f", megabytes)) MB of log)")
        print(String(format: "  reading the file alone            %6.2f s", read))
        print(String(format: "  logger ready, after a clean stop  %6.2f s   (its offsets from the index the stop saved)", fromIndex))
        print(String(format: "  logger ready, after a kill -9     %6.2f s   ratio %.1f × reading the file (every record read and checked)", checked, checked / read))
    }

    /// session.log throughput with metrics on (Prometheus bootstrapped, as the executables run, and
    /// scraped every second) against off (swift-metrics' no-op backend), alternating in one run.
    /// A service's metric objects take their backend when made, so the "off" logger is the one
    /// started before the bootstrap and the "on" logger one started after it.
    static func metricsOnVersusOff(context: Context, off: InProcessService, clients: Int, perClient: Int, rounds: Int) throws {
        let prometheus = PrometheusMetrics()
        prometheus.bootstrap()
        let on = try InProcessService.sessionLogger(context: context)
        defer { on.stop() }
        let scraping = Atomic<Bool>(true)
        let scrapes = Atomic<Int>(0)
        Thread.detachNewThread {
            while scraping.load(ordering: .relaxed) {
                _ = prometheus.exposition()
                scrapes.add(1, ordering: .relaxed)
                Thread.sleep(forTimeInterval: 1)  // a scrape a second, as Prometheus is set up to
            }
        }
        defer { scraping.store(false, ordering: .relaxed) }
        var offRates: [Double] = []
        var onRates: [Double] = []
        for round in 0..<rounds {
            let base = 20_000 + round * 1000
            func measure(_ service: InProcessService, _ offset: Int) -> Double {
                LoadClients.throughput(endpoint: service.api, context: context, clients: clients, window: 64) { client in
                    (0..<perClient).map { sessionLog(n: $0, client: base + offset + client) }
                }
            }
            // ABBA: which goes first alternates, so a drift of the machine favours neither.
            if round % 2 == 0 {
                offRates.append(measure(off, 0))
                onRates.append(measure(on, 500))
            } else {
                onRates.append(measure(on, 500))
                offRates.append(measure(off, 0))
            }
        }
        let offMedian = LoadClients.percentile(offRates, 0.5)
        let onMedian = LoadClients.percentile(onRates, 0.5)
        let pairedMedian = LoadClients.percentile(zip(onRates, offRates).map { $0 / $1 }, 0.5)
        print("metrics on vs off: session.log throughput, \(rounds) alternating rounds, on = Prometheus scraped every second (\(scrapes.load(ordering: .relaxed)) scrapes)")
        print("  off rounds: " + offRates.map { String(format: "%.0f", $0) }.joined(separator: ", ") + " acks/s")
        print("  on  rounds: " + onRates.map { String(format: "%.0f", $0) }.joined(separator: ", ") + " acks/s")
        print(String(format: "  median on / median off = %.0f / %.0f = %.3f", onMedian, offMedian, onMedian / offMedian))
        Target.report(String(format: "session.log with metrics on %.0f acks/s (median)", onMedian),
                      ratio: String(format: "%.3f × off (median of the rounds' on/off)", pairedMedian), target: "≥ 0.95 × off", met: pairedMedian >= 0.95)
    }

    /// The durability floor: one row inserted and committed at a time, WAL with synchronous=FULL as
    /// the services run, each commit timed (milliseconds). An ack cannot come sooner than this.
    static func commitLatencies(count: Int) throws -> [Double] {
        let body = sessionLog(n: 0, client: 0)
        return try ScratchDatabase.with(schema: "CREATE TABLE row (id TEXT PRIMARY KEY, body BLOB)") { database in
            try (0..<count).map { n in
                let start = DispatchTime.now().uptimeNanoseconds
                try database.write { db in try db.run("INSERT INTO row VALUES (?, ?)", arguments: [LoadClients.uuid(n), body]) }
                return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
            }
        }
    }

    /// A client's `session.log` number `n`: its id made of both, so sent again it is the same record.
    static func sessionLog(n: Int, client: Int, user: String? = nil) -> Data {
        sessionLog(n: n, id: RecordID(LoadClients.uuid(n, client: client))!, user: user ?? "bench\(client % 50)")
    }

    /// A 15-minute session that ended 1–11 hours ago, by `n`.
    static func sessionLog(n: Int, id: RecordID, user: String) -> Data {
        let end = Instant.now().adding(seconds: -Int64(60 + n % 600) * 60)
        return LoadClients.frame(Ops.sessionLog, SessionLogRequest(id: id, userId: UserID(user)!, activity: .mindfulness,
                                                                   start: end.adding(seconds: -900), end: end))
    }
}

extension InProcessService {
    /// A session logger on wildcard loopback ports and, unless given one, a fresh data directory.
    static func sessionLogger(context: Context, directory: String = temporaryDirectory("lht-bench").path,
                              extra: [String] = []) throws -> InProcessService {
        try startService(context: context) { context in
            let options = try SessionLoggerOptions.parse(["--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*",
                                                         "--intake", "tcp://127.0.0.1:*", "--data-dir", directory] + extra)
            return try SessionLogger(settings: SessionLoggerSettings(options), logger: Logger(label: "bench"), context: context)
        }
    }
}

/// `--name value` lookups for the benchmarks' few numeric options.
enum Options {
    static func int(_ arguments: [String], _ name: String, _ fallback: Int) -> Int {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
        return value
    }
}
