import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// PROTOCOL "Operations" against the real executables: metrics (promtool, a real Prometheus),
/// logs, stop under load, systemd readiness and units.
@Suite struct OperationsSystemTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    // MARK: Metrics

    @Test func metricsPassPromtoolAndCountRequests() throws {
        try Tools.require("promtool")
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "127.0.0.1:0"])
        let context = try Context()
        let client = try WireClient(logger.api, context: context)
        _ = try client.ok("health")
        _ = try client.ok("session.log", Sessions.session(user: "mia", index: 0))
        _ = try client.failure("no.such.op")
        _ = try client.failure("another.made.up.op")
        let text = try Tools.get("http://\(logger.endpoints["metrics"]!)/metrics")

        #expect(text.contains(#"lht_requests_total{op="health",outcome="ok"} 1"#))
        #expect(text.contains(#"lht_requests_total{op="session.log",outcome="ok"} 1"#))
        #expect(text.contains(#"lht_requests_total{op="unknown",outcome="unknown_op"} 2"#), "unknown ops share one label")
        #expect(text.contains("# TYPE lht_request_duration_seconds histogram"))
        #expect(text.contains(#"lht_request_duration_seconds_bucket{op="session.log",le="+Inf"} 1"#))
        #expect(text.contains(#"lht_events_published_total{type="session.logged"} 1"#))
        #expect(text.contains("lht_event_log_last_seq 1"))
        #expect(text.contains(#"lht_auth_refused_total{reason="unknown_key"} 0"#))
        for family in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds"] {
            #expect(text.contains("\n\(family) "), "\(family)")
        }
        let check = try Tools.run("promtool", ["check", "metrics"], input: Data(text.utf8))
        #expect(check.status == 0, "\(check.output)")
    }

    @Test func deployedPrometheusConfigAndAlertsPassPromtool() throws {
        try Tools.require("promtool")
        let config = try Tools.run("promtool", ["check", "config", Self.repository.appendingPathComponent("deploy/prometheus.yml").path])
        #expect(config.status == 0, "\(config.output)")
        let rules = try Tools.run("promtool", ["check", "rules", Self.repository.appendingPathComponent("deploy/alerts.yml").path])
        #expect(rules.status == 0, "\(rules.output)")
        #expect(rules.output.contains("5 rules found"), "\(rules.output)")
    }

    /// A real Prometheus (Debian's) scrapes all four services and answers a query for one series.
    @Test(.timeLimit(.minutes(2))) func prometheusScrapesAllFourServices() throws {
        try Tools.require("prometheus")
        let metrics = ["--metrics", "127.0.0.1:0"]
        let logger = try ServiceProcess("session-logger", arguments: metrics)
        let upstream = ["--session-logger-api", logger.api, "--session-logger-events", logger.events]
        let planner = try ServiceProcess("reminder-planner", arguments: metrics + upstream)
        let notifier = try ServiceProcess("notifier", arguments: metrics + ["--planner-api", planner.api, "--planner-events", planner.events,
                                                                            "--session-logger-api", logger.api])
        let streak = try ServiceProcess("noalc-streak", arguments: metrics + upstream)
        let services = [logger, planner, notifier, streak]
        let context = try Context()
        _ = try WireClient(logger.api, context: context).ok("session.log", Sessions.session(user: "mia", index: 0))

        let directory = temporaryDirectory("lht-prometheus")
        let targets = services.map { "{targets: ['\($0.endpoints["metrics"]!)'], labels: {service: \($0.name)}}" }.joined(separator: ", ")
        let config = directory.appendingPathComponent("prometheus.yml")
        try """
        global: {scrape_interval: 1s, evaluation_interval: 1s}
        scrape_configs:
          - job_name: lht
            static_configs: [\(targets)]
        """.write(to: config, atomically: true, encoding: .utf8)
        let port = try Tools.freePort()
        let log = directory.appendingPathComponent("prometheus.log")
        let prometheus = try ChildProcess(try Tools.path("prometheus").path, [
            "--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
            "--web.listen-address=127.0.0.1:\(port)",
        ], stdout: .file(log.path), stderr: .file(log.path))
        defer { prometheus.terminate(); prometheus.wait() }

        // Every target up, then the session logger's one acked session.log read back as a series.
        let deadline = Date().addingTimeInterval(60)
        var up: JSONValue?
        var series: JSONValue?
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.5)
            up = try? Tools.query(port: port, "up{job=\"lht\"} == 1")
            guard (up?["data"]?["result"]?.arrayValue.count ?? 0) == 4 else { continue }
            series = try? Tools.query(port: port, "lht_requests_total{service=\"session-logger\",op=\"session.log\",outcome=\"ok\"}")
            if series?["data"]?["result"]?.arrayValue.isEmpty == false { break }
        }
        let log_ = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(up?["data"]?["result"]?.arrayValue.count == 4, "\(String(describing: up)) \(log_.suffix(2000))")
        let sample = series?["data"]?["result"]?[0]
        #expect(sample?["metric"]?["service"]?.stringValue == "session-logger", "\(String(describing: series))")
        #expect(sample?["value"]?[1]?.stringValue == "1", "\(String(describing: series))")
    }

    @Test func explicitMetricsAddressThatCannotBeBoundIsExitTwo() throws {
        let listener = try Tools.Listener()
        let result = try Tools.runService("session-logger", ["--metrics", "127.0.0.1:\(listener.port)"])
        #expect(result.status == 2)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("error: --metrics: cannot serve on 127.0.0.1:\(listener.port)"), "\(result.stderr)")

        let open = try Tools.runService("session-logger", ["--metrics", "0.0.0.0:0"])
        #expect(open.status == 2, "without --keys, not loopback")
        #expect(open.stderr.contains("--metrics: tcp://0.0.0.0:0 is reachable from other machines"), "\(open.stderr)")
        let unusable = try Tools.runService("session-logger", ["--metrics", "localhost"])
        #expect(unusable.status == 2)
    }

    @Test func defaultMetricsAddressTakenOnlyWarns() throws {
        // Someone holds 7309: this listener, once the port is free. A service another test starts on
        // the defaults (DeployScriptTests) holds it only for a while, and one that let it go between a
        // single look and this logger's start let the logger bind it. Only one that holds it for the
        // whole minute (services a developer left running) is left to hold it for us.
        var listener = try? Tools.Listener(port: 7309)
        for _ in 0..<600 where listener == nil {
            Thread.sleep(forTimeInterval: 0.1)
            listener = try? Tools.Listener(port: 7309)
        }
        let errors = temporaryDirectory("lht-ops").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", errorLog: errors)
        #expect(!logger.readyLine.contains("metrics="), "\(logger.readyLine)")
        #expect(try String(contentsOf: errors, encoding: .utf8).contains("metrics not served: the default address cannot be bound"))
        _ = listener
        let off = try ServiceProcess("notifier", arguments: ["--metrics", "off"])
        #expect(!off.readyLine.contains("metrics="), "\(off.readyLine)")
    }

    // MARK: Logs

    @Test func jsonLogLinesOfARealProcess() throws {
        let errors = temporaryDirectory("lht-ops").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", arguments: ["--log-format", "json", "--metrics", "off"],
                                        environment: ["LHT_LOG_LEVEL": "debug"], errorLog: errors)
        // An intake message that is not a request: rejected, logged at notice with its reason.
        let context = try Context()
        let publisher = try Socket(context, .pub)
        try publisher.connect(logger.endpoints["intake"]!)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !((try? String(contentsOf: errors, encoding: .utf8)) ?? "").contains("intake message rejected") {
            _ = try publisher.send(multipart: [Data("intake".utf8), Data("not json".utf8)])
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(logger.terminate(timeout: 5).status == 0)

        let lines = try String(contentsOf: errors, encoding: .utf8).split(separator: "\n")
        #expect(lines.count >= 2, "\(lines)")
        let time = try Regex(#"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#)
        let levels: Set<String> = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        var messages: [String: JSONValue] = [:]
        for line in lines {
            let object = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
            let stamp = object["time"]?.stringValue ?? ""
            #expect(stamp.wholeMatch(of: time) != nil, "\(line)")
            #expect(levels.contains(object["level"]?.stringValue ?? ""), "\(line)")
            #expect(object["service"]?.stringValue == "session-logger", "\(line)")
            if let message = object["message"]?.stringValue { messages[message] = object }
        }
        #expect(messages["intake message rejected"]?["level"]?.stringValue == "notice")
        #expect(messages["intake message rejected"]?["reason"]?.stringValue?.isEmpty == false)
        #expect(messages["stopping"]?["level"]?.stringValue == "info")
    }

    @Test func unusableLogFlagsAreExitTwo() throws {
        #expect(try Tools.runService("notifier", ["--log-format", "xml"]).status == 2)
        let level = try Tools.runService("notifier", [], environment: ["LHT_LOG_LEVEL": "loud"])
        #expect(level.status == 2)
        #expect(level.stderr.hasPrefix("error: --log-level: \"loud\" is not one of trace, debug"), "\(level.stderr)")
    }

    // MARK: Stop

    /// Many pipelined session.log, SIGTERM midway: exit 0 within 2 s, every acked id stored (seen
    /// after a restart) and published to the subscriber that was connected. Several rounds, since
    /// losing queued events at close was a one-in-five thing.
    @Test(.timeLimit(.minutes(3))) func stopUnderLoadLosesNoAckedRequest() throws {
        for round in 0..<4 {
            let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off"])
            let context = try Context()
            // A subscriber that reads all along but a little slower than the service publishes,
            // so events queue in the service and a stop finds some still to send.
            let subscriber = SlowSubscriber(endpoint: logger.events, context: context)
            Thread.sleep(forTimeInterval: 0.3)
            let dealer = try Socket(context, .dealer)
            try dealer.setSendHighWaterMark(0)
            try dealer.setReceiveHighWaterMark(0)
            try dealer.connect(logger.api)

            // At most `window` requests ahead of the acks read, so the stop comes mid-load however fast
            // the service is (sent all at once, a faster service had answered all 6,000 before it).
            let total = 6000, window = 1000
            var sent = 0
            func sendNext() throws {
                var data = Sessions.session(user: "stop\(round)", index: sent)
                data["id"] = UUID().uuidString.lowercased()
                let frame = try JSONSerialization.data(withJSONObject: ["v": 1, "op": "session.log", "data": data])
                _ = try dealer.send(multipart: [Data(), frame])
                sent += 1
            }
            while sent < window { try sendNext() }
            // Read acks until about a third are in, sending one more for each, then SIGTERM, and keep
            // reading (and sending) while answers still come.
            var acked: Set<String> = []
            var stopped: (status: Int32?, seconds: TimeInterval)?
            try dealer.setReceiveTimeout(milliseconds: 10_000)
            while acked.count < total / 3, let frames = try dealer.receiveMultipart() {
                if let id = Self.ackedId(frames.last!) { acked.insert(id) }
                if sent < total { try sendNext() }
            }
            let signalled = Date()
            logger.process.terminate()
            // Answers are read until the service has exited, and for half a second after: not until the
            // first half-second without one, since the stop's last sync can take longer on a busy disk.
            try dealer.setReceiveTimeout(milliseconds: 100)
            var exited: Date?
            while exited.map({ Date().timeIntervalSince($0) < 0.5 }) ?? (Date().timeIntervalSince(signalled) < 5) {
                if let frames = try dealer.receiveMultipart() {
                    if let id = Self.ackedId(frames.last!) { acked.insert(id) }
                    if sent < total { try sendNext() }
                } else if exited == nil, !logger.process.isRunning {
                    exited = Date()
                }
            }
            while logger.process.isRunning, Date().timeIntervalSince(signalled) < 5 { Thread.sleep(forTimeInterval: 0.005) }
            // The exit as the reading saw it (at most one receive timeout late), not after the half-second drain.
            stopped = (logger.process.poll()?.status, (exited ?? Date()).timeIntervalSince(signalled))
            #expect(stopped?.status == 0, "round \(round)")
            #expect((stopped?.seconds ?? 99) < 2.5, "round \(round): exit took \(stopped?.seconds ?? -1) s")
            #expect(acked.count >= total / 3, "round \(round): \(acked.count) acked")

            // Every acked event reached the subscriber that was connected.
            let published = subscriber.finish()
            let unpublished = acked.subtracting(published)
            print("stop round \(round): \(acked.count) acked, \(published.count) published to the subscriber, exit in \(String(format: "%.2f", stopped?.seconds ?? -1)) s")
            #expect(unpublished.isEmpty, "round \(round): \(unpublished.count) of \(acked.count) acked events never reached the subscriber")
            // And the stop answered what it held: every request whose event went out got its ack
            // (exiting without closing the api with a linger lost up to a few hundred answers a stop).
            let unanswered = published.subtracting(acked)
            #expect(unanswered.isEmpty, "round \(round): \(unanswered.count) requests stored and published but never answered")

            // Every acked id is stored: after a restart, events.since returns each one.
            try logger.restart()
            let client = try WireClient(logger.api, context: context)
            var stored: Set<String> = []
            var after: Int64 = 0
            while true {
                let page = try client.ok("events.since", ["after": after, "limit": 1000])
                let events = page["events"]?.arrayValue ?? []
                if events.isEmpty { break }
                for event in events { if let id = event["data"]?["id"]?.stringValue { stored.insert(id) } }
                after = events.last?["seq"]?.intValue ?? after
            }
            let lost = acked.subtracting(stored)
            #expect(lost.isEmpty, "round \(round): \(lost.count) acked requests lost")
            logger.stop()
        }
    }

    static func ackedId(_ reply: Data) -> String? {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: reply), value["ok"]?.boolValue == true else { return nil }
        return value["data"]?["id"]?.stringValue
    }

    // MARK: systemd

    /// sd_notify's datagram protocol: READY=1 once ready, STOPPING=1 at stop, to $NOTIFY_SOCKET.
    @Test func readyAndStoppingGoToTheNotifySocket() throws {
        let directory = temporaryDirectory("lht-notify")
        let path = directory.appendingPathComponent("notify").path
        let socket = try DatagramListener(path: path)
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off"], environment: ["NOTIFY_SOCKET": path])
        let ready = socket.receive(timeout: 5)
        #expect(ready?.split(separator: "\n").contains("READY=1") == true, "\(String(describing: ready))")
        #expect(ready?.contains("MAINPID=\(logger.process.pid)") == true)
        #expect(logger.terminate(timeout: 5).status == 0)
        #expect(socket.receive(timeout: 2) == "STOPPING=1")
    }

    @Test func systemdUnitsVerify() throws {
        try Tools.require("systemd-analyze")
        let units = Self.repository.appendingPathComponent("deploy/systemd")
        let directory = temporaryDirectory("lht-units")
        var names: [String] = []
        for service in ["session-logger", "reminder-planner", "notifier", "noalc-streak"] {
            let name = "lht-\(service).service"
            let text = try String(contentsOf: units.appendingPathComponent(name), encoding: .utf8)
            for required in ["Type=notify", "Restart=on-failure", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                             "StateDirectory=lht/\(service) lht/keys", "StateDirectoryMode=0700", "--keys %S/lht/keys", "--metrics ${LHT_"] {
                #expect(text.contains(required), "\(name): \(required)")
            }
            // verify checks that ExecStart's binary exists: point it at the built one.
            try text.replacingOccurrences(of: "/usr/local/bin/", with: BuildProducts.directory.path + "/")
                .write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
            names.append(directory.appendingPathComponent(name).path)
        }
        // The templates for several instances over PostgreSQL, verified as instance "a".
        for service in ["session-logger", "reminder-planner", "notifier", "noalc-streak"] {
            let text = try String(contentsOf: units.appendingPathComponent("lht-\(service)@.service"), encoding: .utf8)
            for required in ["Type=notify", "Restart=on-failure", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                             "EnvironmentFile=/etc/lht/\(service)@%i.env", "--database ${LHT_DATABASE}", "--instance %H:%i",
                             "StateDirectory=lht/\(service)@%i lht/keys", "StateDirectoryMode=0700", "--keys %S/lht/keys", "--metrics ${LHT_"] {
                #expect(text.contains(required), "lht-\(service)@.service: \(required)")
            }
            let instance = directory.appendingPathComponent("lht-\(service)@a.service")
            try text.replacingOccurrences(of: "/usr/local/bin/", with: BuildProducts.directory.path + "/")
                .write(to: instance, atomically: true, encoding: .utf8)
            names.append(instance.path)
        }
        let result = try Tools.run("systemd-analyze", ["verify"] + names)
        #expect(result.status == 0, "\(result.output)")
        // An unknown or misspelt option is only a warning to systemd: none may appear.
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(result.output)")
    }
}

/// Reads `session.logged.` events on its own thread, pausing briefly after each, until `finish`.
final class SlowSubscriber: @unchecked Sendable {
    private let ids = Mutex<Set<String>>([])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(endpoint: String, context: Context) {
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            guard let socket = try? Socket(context, .sub) else { return }
            try? socket.setReceiveHighWaterMark(100)
            try? socket.subscribe("session.logged.")
            try? socket.connect(endpoint)
            try? socket.setReceiveTimeout(milliseconds: 1000)
            while true {
                guard let frames = try? socket.receiveMultipart() else {
                    if stopping.load(ordering: .acquiring) { return }  // a quiet second after the stop
                    continue
                }
                if let envelope = try? JSONDecoder().decode(JSONValue.self, from: frames[1]), let id = envelope["data"]?["id"]?.stringValue {
                    ids.withLock { _ = $0.insert(id) }
                }
                usleep(250)
            }
        }
    }

    /// Waits until nothing arrived for a second, then returns every id received.
    func finish() -> Set<String> {
        stopping.store(true, ordering: .releasing)
        done.wait()
        return ids.withLock { $0 }
    }
}

/// Sessions that never overlap: one a minute, going back from an hour ago.
enum Sessions {
    static func session(user: String, index: Int) -> [String: Any] {
        let end = Instant.now().adding(seconds: Int64(-3600 - index * 60))
        return ["userId": user, "activity": "mindfulness", "start": end.adding(seconds: -30).description, "end": end.description]
    }
}

/// A Unix datagram socket bound at `path`, as systemd's notify socket is.
final class DatagramListener {
    let descriptor: Int32

    init(path: String) throws {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw HarnessError("cannot bind \(path): errno \(errno)") }
    }

    func receive(timeout: TimeInterval) -> String? {
        var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    deinit { close(descriptor) }
}

/// Programs the tests run (installed by `deploy/install-prerequisites --ops` when missing).
enum Tools {
    static func path(_ tool: String) throws -> URL {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin"] {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent(tool)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw HarnessError("\(tool) is not installed")
    }

    private static let installing = NSLock()

    /// Installs the ops prerequisites once when `tool` is missing, as the project installs what it needs.
    static func require(_ tool: String) throws {
        installing.lock()
        defer { installing.unlock() }
        if (try? path(tool)) != nil { return }
        let script = OperationsSystemTests.repository.appendingPathComponent("deploy/install-prerequisites")
        let result = try run("/bin/bash", [script.path, "--ops"])
        guard (try? path(tool)) != nil else { throw HarnessError("\(tool) missing and install-prerequisites --ops failed: \(result.output)") }
    }

    static func run(_ tool: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil) throws
        -> (status: Int32, output: String) {
        let directory = temporaryDirectory("lht-tool")
        let inputFile = directory.appendingPathComponent("input"), outputFile = directory.appendingPathComponent("output")
        if let input { try input.write(to: inputFile) }
        let process = try ChildProcess(tool.hasPrefix("/") ? tool : try path(tool).path, arguments, environment: environment,
                                       stdin: input == nil ? .null : .file(inputFile.path),
                                       stdout: .file(outputFile.path), stderr: .file(outputFile.path))
        return (process.wait().status, (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "")
    }

    /// Runs a service that is expected to exit by itself (a start-up error); one still running after 10 s is
    /// killed and an error.
    static func runService(_ name: String, _ arguments: [String], environment extra: [String: String] = [:]) throws
        -> (status: Int32, stderr: String) {
        let data = temporaryDirectory("lht-ops").appendingPathComponent("data")
        let run = try CapturedProcess(BuildProducts.executable(name).path, [
            "--data-dir", data.path, "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*",
        ] + (name == "session-logger" ? ["--intake", "tcp://127.0.0.1:*"] : []) + arguments,
            environment: ProcessInfo.processInfo.environment.merging(extra) { _, given in given }).finish(timeout: 10)
        return (run.status, run.stderr)
    }

    /// GET over plain HTTP/1.1 on loopback (URLSession needs FoundationNetworking; a socket is enough).
    static func get(_ url: String) throws -> String {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw HarnessError("bad url \(url)")
        }
        var target = components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        return String(decoding: try httpGet(host: host, port: port, target: target), as: UTF8.self)
    }

    /// A Prometheus instant query through its HTTP API.
    static func query(port: Int, _ expression: String) throws -> JSONValue {
        var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return try JSONDecoder().decode(JSONValue.self, from: Data(get(components.string!).utf8))
    }

    /// A TCP listener on loopback (port 0: any free one).
    final class Listener {
        let descriptor: Int32
        let port: Int

        init(port requested: Int = 0) throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var yes: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(requested).bigEndian)
            inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(descriptor, 8) == 0 else {
                close(descriptor)
                throw HarnessError("cannot listen on 127.0.0.1:\(requested)")
            }
            var actual = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &actual) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            self.descriptor = descriptor
            port = Int(UInt16(bigEndian: actual.sin_port))
        }

        deinit { close(descriptor) }
    }

    static func freePort() throws -> Int { try Listener().port }
}
