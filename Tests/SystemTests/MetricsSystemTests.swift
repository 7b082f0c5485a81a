import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// PROTOCOL "Operations", metrics, against the real executables: promtool, a real Prometheus, the metrics address.
@Suite struct MetricsSystemTests {
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
        let config = try Tools.run("promtool", ["check", "config", repositoryRoot.appendingPathComponent("deploy/prometheus.yml").path])
        #expect(config.status == 0, "\(config.output)")
        let rules = try Tools.run("promtool", ["check", "rules", repositoryRoot.appendingPathComponent("deploy/alerts.yml").path])
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
        var up: JSONValue?
        var series: JSONValue?
        let log_ = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        try waitUntil(timeout: 60, interval: 0.5, "every target up and the session.log series scraped (\(String(describing: up)) \(log_().suffix(2000)))") {
            up = try? Tools.query(port: port, "up{job=\"lht\"} == 1")
            guard (up?["data"]?["result"]?.arrayValue.count ?? 0) == 4 else { return false }
            series = try? Tools.query(port: port, "lht_requests_total{service=\"session-logger\",op=\"session.log\",outcome=\"ok\"}")
            return series?["data"]?["result"]?.arrayValue.isEmpty == false
        }
        #expect(up?["data"]?["result"]?.arrayValue.count == 4, "\(String(describing: up)) \(log_().suffix(2000))")
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
        // Nil when it stays held the whole minute: then its holder stands in for this listener.
        let listener = try? waitFor(timeout: 60, interval: 0.1, "port 7309 free") { try? Tools.Listener(port: 7309) }
        let errors = temporaryDirectory("lht-ops").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", errorLog: errors)
        #expect(!logger.readyLine.contains("metrics="), "\(logger.readyLine)")
        #expect(try String(contentsOf: errors, encoding: .utf8).contains("metrics not served: the default address cannot be bound"))
        _ = listener
        let off = try ServiceProcess("notifier", arguments: ["--metrics", "off"])
        #expect(!off.readyLine.contains("metrics="), "\(off.readyLine)")
    }
}
