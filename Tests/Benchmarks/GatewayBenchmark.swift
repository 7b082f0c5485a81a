import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import TestSupport
import ZeroMQ

/// `bench gateway [--connections 64] [--seconds 10] [--per-client 300] [--streams 1000] [--samples 200] [--quick]`
///
/// The HTTP gateway (release build) in front of a session-logger, both with keys, as deployed:
/// (b) `--streams` SSE streams open at once: the gateway's resident memory per stream, and
/// session.log → arrival p99 on one of them while all are open (target ≤ 50 ms), beside the ack's
/// own round trip; (a) `session.log` over HTTP/1.1 keep-alive, driven by wrk and
/// `wrk/session_log.lua` with a token, `--connections` at once, beside the same requests over
/// ZeroMQ (as many DEALERs, one request in flight each, CURVE) in the same run (target ≥ 0.5×).
enum GatewayBenchmark {
    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let connections = Options.int(arguments, "--connections", 64)
        let seconds = Options.int(arguments, "--seconds", quick ? 4 : 10)
        let perClient = Options.int(arguments, "--per-client", quick ? 100 : 300)
        let streams = Options.int(arguments, "--streams", quick ? 200 : 1000)
        let samples = Options.int(arguments, "--samples", quick ? 50 : 200)
        let rig = try Rig()
        defer { rig.stop() }
        try GatewayStreams.measure(rig, streams: streams, samples: samples)
        try compareWithZeroMQ(rig, connections: connections, seconds: seconds, perClient: perClient)
    }

    /// A session-logger and the gateway in front of it, each a child process, with a key directory of their own.
    final class Rig {
        let keys: KeyDirectory
        let logger: StreakBenchmark.Child
        let gateway: StreakBenchmark.Child
        let port: Int
        let context: Context

        init() throws {
            let directory = temporaryDirectory("lht-bench-gateway")
            let path = directory.appendingPathComponent("keys").path
            let lht = StreakBenchmark.Child.directory.appendingPathComponent("lht").path
            guard try ChildProcess(lht, ["keys", "init", path], stdout: .null, stderr: .null).wait() == .exited(0) else {
                throw BenchError("lht keys init \(path) failed")
            }
            keys = KeyDirectory(path)
            logger = try StreakBenchmark.Child("session-logger", ["--data-dir", directory.appendingPathComponent("logger").path, "--api", "tcp://127.0.0.1:*",
                                                                  "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*", "--metrics", "off",
                                                                  "--keys", path])
            gateway = try StreakBenchmark.Child("http-gateway", ["--http", "127.0.0.1:0", "--metrics", "off", "--keys", path, "--keepalive-seconds", "300",
                                                                 "--session-logger-api", logger.endpoints["api"]!,
                                                                 "--session-logger-events", logger.endpoints["events"]!])
            guard let address = gateway.endpoints["http"], let port = address.split(separator: ":").last.flatMap({ Int($0) }) else {
                throw BenchError("no http= in the gateway's ready line")
            }
            self.port = port
            context = try Context()
        }

        /// A new token of `user`, once the gateway takes it (it re-reads its tokens within 5 s).
        func token(_ user: String) throws -> String {
            try TokenStore(keys: keys).add(UserID(user)!, label: user).token
        }

        /// Waits until the gateway takes `token`: `user.get` answers other than 401.
        func waitForToken(_ token: String) throws {
            let deadline = Date().addingTimeInterval(10)
            while try GatewayStreams.status(port: port, "POST /v1/user.get HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer \(token)\r\n"
                                            + "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}") == 401 {
                guard Date() < deadline else { throw BenchError("the gateway did not take a new token within 10 s") }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }

        /// The admin's CURVE credentials to the session-logger: the ZeroMQ side of the comparison.
        func adminCredentials() throws -> CurveCredentials {
            let admin = try keys.adminCertificate()
            return CurveCredentials(publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: try keys.servicePublicKey("session-logger"))
        }

        var gatewayMegabytes: Double { ProcessStatus.megabytes("VmRSS", of: "\(gateway.process.pid)") }

        func stop() {
            gateway.stop()
            logger.stop()
        }
    }

    /// (a) wrk against the gateway, then the same requests over ZeroMQ straight to the logger.
    static func compareWithZeroMQ(_ rig: Rig, connections: Int, seconds: Int, perClient: Int) throws {
        let token = try rig.token("wrk")
        try rig.waitForToken(token)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("wrk/session_log.lua").path
        guard let wrk = RedisAnchor.executableOnPath("wrk") else {
            return print("session.log over HTTP: skipped (no wrk; deploy/install-prerequisites --bench installs it)")
        }
        let before = (gateway: cpuSeconds(rig.gateway.process.pid), logger: cpuSeconds(rig.logger.process.pid))
        let (status, output, errors) = try ZeroMQPubSub.execute("/usr/bin/env", [
            "LHT_TOKEN=\(token)", "LHT_SALT=\(Int(Date().timeIntervalSince1970) % 100_000)", wrk, "-t", "2", "-c", "\(connections)",
            "-d", "\(seconds)s", "--latency", "-s", script, "http://127.0.0.1:\(rig.port)"])
        guard status == 0, let rate = number(after: "Requests/sec:", in: output) else { throw BenchError("wrk failed (\(status)): \(output) \(errors)") }
        let counted = output.split(separator: "\n").first { $0.contains(" requests in ") }?.split(separator: " ").first.flatMap { Double($0) }
        let requests = counted ?? rate * Double(seconds)
        let gatewayCPU = (cpuSeconds(rig.gateway.process.pid) - before.gateway) / requests * 1e6
        let loggerCPU = (cpuSeconds(rig.logger.process.pid) - before.logger) / requests * 1e6
        let refused = number(after: "Non-2xx or 3xx responses:", in: output) ?? 0
        let p99 = output.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("99%") }
            .map { $0.split(separator: " ").last.map(String.init) ?? "?" } ?? "?"

        let credentials = try rig.adminCredentials()
        let loggerBefore = cpuSeconds(rig.logger.process.pid)
        let zeromq = LoadClients.load(endpoint: rig.logger.endpoints["api"]!, context: rig.context, clients: connections, window: 1,
                                      credentials: { _ in credentials }) { client in
            (0..<perClient).map { SessionLogBenchmark.sessionLog(n: $0, client: 800 + client, user: "zmq") }
        }
        let loggerZeroMQCPU = (cpuSeconds(rig.logger.process.pid) - loggerBefore) / Double(connections * perClient) * 1e6
        let ratio = rate / zeromq.rate
        print("session.log, \(connections) connections, one request in flight each (HTTP/1.1 keep-alive vs ZeroMQ DEALERs), keys on both")
        print(String(format: "  over ZeroMQ (CURVE, admin for the user)   %8.0f acks/s   p50 %.2f ms   p99 %.2f ms", zeromq.rate, zeromq.p50, zeromq.p99))
        print(String(format: "  over HTTP through the gateway (wrk)       %8.0f req/s    p99 %@   non-2xx %.0f", rate, p99, refused))
        print(String(format: "  CPU per request: the gateway %.0f µs, the logger %.0f µs (over ZeroMQ: the logger %.0f µs)", gatewayCPU, loggerCPU, loggerZeroMQCPU))
        Target.report(String(format: "session.log over HTTP %.0f req/s, non-2xx %.0f", rate, refused), ratio: String(format: "%.3f × ZeroMQ", ratio),
                      target: "≥ 0.5 × ZeroMQ, none refused", met: ratio >= 0.5 && refused == 0)
    }

    /// The CPU time process `pid` has had so far (user and system), in seconds, from `/proc/<pid>/stat`.
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ")?.upperBound else { return .nan }
        // Fields 14 and 15 (utime, stime), counted after the name's closing parenthesis (field 2).
        let fields = stat[afterName...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func number(after label: String, in text: String) -> Double? {
        guard let line = text.split(separator: "\n").first(where: { $0.contains(label) }) else { return nil }
        return line.components(separatedBy: label).last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }
}
