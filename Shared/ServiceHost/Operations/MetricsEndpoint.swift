import CoreMetrics
import FlyingFox
import FlyingSocks
import Foundation
import Logging
import Prometheus

/// The Prometheus side of the host's metrics (PROTOCOL "Operations"): the registry behind the
/// swift-metrics façade, and its text exposition with HELP lines and the `process_*` families.
/// Only an executable bootstraps it (`ServiceCommandLine.serve`); in-process services and tests
/// emit into swift-metrics' no-op backend unless they bootstrap their own.
public final class PrometheusMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory

    /// Request durations are mostly well under a millisecond: buckets from 100 µs to 10 s.
    public static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.durationBuckets
        self.factory = factory
    }

    /// Makes this the process's swift-metrics backend. Once per process.
    public func bootstrap() { MetricsSystem.bootstrap(factory) }

    /// The text exposition format 0.0.4: the registry's families with a HELP line each, then the
    /// process's own.
    public func exposition() -> [UInt8] {
        var families: [UInt8] = []
        families.reserveCapacity(16 << 10)
        registry.emit(into: &families)
        var output: [UInt8] = []
        output.reserveCapacity(families.count + 2048)
        for line in families.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            // swift-metrics carries no help text; the registry writes `# TYPE name kind` first in each family.
            if line.starts(with: Self.typePrefix) {
                let name = line.dropFirst(Self.typePrefix.count).prefix { $0 != UInt8(ascii: " ") }
                let text = String(decoding: name, as: UTF8.self)
                output += Array("# HELP \(text) \(Self.help(for: text))\n".utf8)
            }
            output += line
            output.append(UInt8(ascii: "\n"))
        }
        output += Array(ProcessMetrics.read().exposition().utf8)
        return output
    }

    private static let typePrefix = Array("# TYPE ".utf8)

    static let helpTexts: [String: String] = [
        "lht_requests_total": "Requests answered, by op (unknown for an op no one serves) and outcome (ok or the error code).",
        "lht_request_duration_seconds": "Time from reading a request to its reply, by op.",
        "lht_events_published_total": "Events published on the events socket, by type.",
        "lht_event_log_last_seq": "The newest seq in this service's event log.",
        "lht_instance_info": "Always 1; its instance label names this service instance (--instance).",
        "lht_upstream_lag_events": "Events the upstream has published that this service has not applied yet.",
        "lht_auth_refused_total": "Refusals: request and subscription (by the access rules), not_curve, unknown_key, no_identity, malformed (at the handshake).",
        "lht_decisions_total": "Occurrences decided by the planner, by kind (due, suppressed, skipped, missed).",
        "lht_notifications_total": "Notifications by outcome (sent, rate_limited).",
        "lht_intake_dropped_total": "Intake messages dropped, by reason (malformed or the error code).",
        "lht_owned_partitions": "Partitions of the 64 whose time-driven work this instance does now; over the live instances of a service they add up to 64.",
        "lht_lease_age_seconds": "Seconds since this instance last confirmed its partition leases with the database.",
        "lht_log_lock_hold_seconds": "How long each write transaction held the shared log row's lock that other instances wait on (PostgreSQL).",
    ]

    static func help(for name: String) -> String {
        if let text = helpTexts[name] { return text }
        // host.count("sessionsApplied") → lht_sessions_applied_total.
        if name.hasPrefix("lht_"), name.hasSuffix("_total") {
            return "Count of " + name.dropFirst(4).dropLast(6).replacingOccurrences(of: "_", with: " ") + "."
        }
        return name.replacingOccurrences(of: "_", with: " ") + "."
    }
}

/// The standard `process_*` metrics, from /proc (Linux).
struct ProcessMetrics {
    var cpuSeconds: Double?
    var residentBytes: Int?
    var virtualBytes: Int?
    var openFileDescriptors: Int?
    var maxFileDescriptors: Int?
    var startTimeSeconds: Double?

    static func read() -> ProcessMetrics {
        var metrics = ProcessMetrics()
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = sysconf(Int32(_SC_PAGESIZE))
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
           let close = stat.lastIndex(of: ")") {
            // Fields after "(comm)": state is field 3, utime 14, stime 15, starttime 22, vsize 23, rss 24.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
            if let user = field(14), let system = field(15), ticks > 0 { metrics.cpuSeconds = (user + system) / ticks }
            if let virtual = field(23) { metrics.virtualBytes = Int(virtual) }
            if let rss = field(24) { metrics.residentBytes = Int(rss) * page }
            if let start = field(22), ticks > 0, let boot = bootTime() { metrics.startTimeSeconds = boot + start / ticks }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            metrics.openFileDescriptors = max(0, entries.count - 1)  // less the descriptor that listed it
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { metrics.maxFileDescriptors = Int(clamping: limit.rlim_cur) }
        return metrics
    }

    private static func bootTime() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    func exposition() -> String {
        var text = ""
        func family(_ name: String, _ kind: String, _ help: String, _ value: Double?) {
            guard let value else { return }
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind)\n\(name) \(value)\n"
        }
        family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpuSeconds)
        family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", residentBytes.map(Double.init))
        family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", virtualBytes.map(Double.init))
        family("process_open_fds", "gauge", "Number of open file descriptors.", openFileDescriptors.map(Double.init))
        family("process_max_fds", "gauge", "Maximum number of open file descriptors.", maxFileDescriptors.map(Double.init))
        family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", startTimeSeconds)
        return text
    }
}

/// Serves `GET /metrics` over HTTP with FlyingFox, on its own threads (FlyingFox's epoll queue and
/// Swift's concurrency pool), never the service loop's: a busy loop does not delay a scrape, and a
/// scrape only reads the registry's atomics and locks.
public final class MetricsServer: Sendable {
    private let server: HTTPServer
    /// The address bound, `host:port` (port 0 resolved).
    public let address: String

    /// Binds `host:port` and starts serving; throws when it cannot bind within 5 s.
    public init(host: String, port: UInt16, metrics: PrometheusMetrics) throws {
        let socketAddress: any SocketAddress = host.contains(":")
            ? try sockaddr_in6.inet6(ip6: host, port: port)
            : try sockaddr_in.inet(ip4: host, port: port)
        let server = HTTPServer(address: socketAddress, timeout: 10, pool: HTTPServer.defaultPool(), logger: .disabled)
        self.server = server
        let started = StartOutcome()
        Task.detached {
            await server.appendRoute("GET /metrics") { _ in
                HTTPResponse(statusCode: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                             body: Data(metrics.exposition()))
            }
            await server.appendRoute("GET /") { _ in
                HTTPResponse(statusCode: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: Data("metrics at /metrics\n".utf8))
            }
            do {
                try await server.run()
            } catch {
                started.finish(.failure(error))
            }
        }
        Task.detached {
            do {
                try await server.waitUntilListening(timeout: 5)
                started.finish(.success(await server.listeningAddress))
            } catch {
                started.finish(.failure(error))
            }
        }
        switch started.result() {
        case .success(let bound):
            switch bound {
            case .ip4(let ip, let port): address = "\(ip):\(port)"
            case .ip6(let ip, let port): address = "[\(ip)]:\(port)"
            default: address = "\(host):\(port)"
            }
        case .failure(let error):
            throw MetricsBindError(address: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)", underlying: error)
        }
    }

    public func stop() {
        let server = server
        Task.detached { await server.stop(timeout: 0) }
    }
}

public struct MetricsBindError: Error, CustomStringConvertible {
    public let address: String
    public let underlying: any Error
    public var description: String { "--metrics: cannot serve on \(address): \(underlying)" }
}

/// The first outcome of a server's start, handed from its tasks to the thread that waits.
private final class StartOutcome: @unchecked Sendable {
    private let condition = NSCondition()
    private var outcome: Result<Socket.Address?, any Error>?

    func finish(_ result: Result<Socket.Address?, any Error>) {
        condition.lock()
        if outcome == nil { outcome = result }
        condition.broadcast()
        condition.unlock()
    }

    func result() -> Result<Socket.Address?, any Error> {
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil { condition.wait() }
        return outcome!
    }
}
