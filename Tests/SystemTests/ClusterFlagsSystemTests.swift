import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// PROTOCOL "Cluster", the flags, on the built executables: `--database` and `--instance` on a
/// service, and `lht` given every instance of a service, the first of them dead.
@Suite struct ClusterFlagsSystemTests {
    @Test func unusableClusterFlagsAreExitTwoAndShowNoPassword() throws {
        let flag = try Tools.runService("notifier", ["--database", "mysql://lht:s3cret@db/lht"])
        #expect(flag.status == 2)
        #expect(flag.stderr == "error: --database: \"mysql://lht:***@db/lht\" is not a PostgreSQL URL postgresql://user[:password]@host[:port]/dbname\n")
        let variable = try Tools.runService("session-logger", [], environment: ["LHT_DATABASE": "db.example:5432?password=s3cret"])
        #expect(variable.status == 2)
        #expect(variable.stderr.hasPrefix("error: --database: ") && !variable.stderr.contains("s3cret"), "\(variable.stderr)")
        let list = try Tools.runService("reminder-planner", ["--session-logger-api", "tcp://127.0.0.1:7301,"])
        #expect(list.status == 2)
        #expect(list.stderr.hasPrefix("error: --session-logger-api: \"tcp://127.0.0.1:7301,\" has an empty endpoint"), "\(list.stderr)")
    }

    @Test func theInstanceNamesItsLogLinesHealthAndMetrics() throws {
        let errors = temporaryDirectory("lht-cluster").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", arguments: ["--instance", "logger-a", "--metrics", "127.0.0.1:0", "--log-format", "json"],
                                        environment: ["LHT_LOG_LEVEL": "info"], errorLog: errors)
        #expect(try WireClient(logger.api, context: Context()).ok("health")["instance"]?.stringValue == "logger-a")
        let metrics = try Tools.get("http://\(logger.endpoints["metrics"]!)/metrics")
        #expect(metrics.contains(#"lht_instance_info{instance="logger-a"} 1"#), "\(metrics.prefix(3000))")
        #expect(logger.terminate(timeout: 5).status == 0)
        let lines = try String(contentsOf: errors, encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))["instance"]?.stringValue == "logger-a", "\(line)")
        }
    }

    @Test func lhtTakesEveryInstanceOfAServiceAndShowsTheOneThatAnswered() throws {
        let logger = try ServiceProcess("session-logger", arguments: ["--instance", "logger-a"])
        let dead = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        let loggers = "\(dead),\(logger.api)"
        let subscriber = try userProcess(BuildProducts.executable("lht"), [
            "subscribe", "noalc.logged.", "--session-logger-events", "\(dead),\(logger.events)", "--session-logger", loggers,
            "--count", "1", "--max-wait", "20",
        ])
        try subscriber.waitForError("listening on ")

        let logged = try runLHT(["noalc", "log", "steady", "--day", "2026-11-02", "--user", "nora", "--session-logger", loggers, "--timeout", "1"])
        #expect(logged.status == 0, "\(logged.stderr)")
        let received = try subscriber.finish()
        #expect(received.status == 0, "\(received.stderr)")
        #expect(received.stdout.hasPrefix(#"{"topic":"noalc.logged.nora.noalc","#), "\(received.stdout)")

        // health lists every instance: the dead one too, so the status is 3.
        let health = try runLHT(["health", "session-logger", "--session-logger", loggers, "--timeout", "1"])
        #expect(health.status == 3, "\(health.stderr)")
        let rows = health.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(rows.count == 4, "\(health.stdout)")
        #expect(rows[1] == "session-logger \(dead) no answer", "\(health.stdout)")
        #expect(rows[2].hasPrefix("session-logger \(logger.api) up 1.0.0 logger-a "), "\(health.stdout)")
        #expect(rows[3] == "session-logger: 1 of 2 instances up")
        #expect(health.stderr == "error: session-logger did not answer health at \(dead) within 1 s (is it running?)\n")

        let status = try runLHT(["status", "--json", "--session-logger", loggers, "--planner", dead, "--notifier", dead, "--streak", dead,
                                 "--timeout", "1"])
        #expect(status.status == 3)  // the other three are down
        let first = try JSONDecoder().decode(JSONValue.self, from: Data(status.stdout.utf8))["services"]?[0]
        #expect(first?["api"]?.stringValue == loggers)
        #expect(first?["up"]?.boolValue == true)
        #expect(first?["instance"]?.stringValue == "logger-a")
        #expect(first?["instances"]?.arrayValue.map { $0["up"]?.boolValue } == [false, true])

        let nowhere = "\(dead),tcp://127.0.0.1:\(try freeLoopbackPort())"
        let unanswered = try runLHT(["health", "session-logger", "--session-logger", nowhere, "--timeout", "0.5"])
        #expect(unanswered.status == 3)
        #expect(unanswered.stderr == nowhere.split(separator: ",").map { "error: session-logger did not answer health at \($0) within 0.5 s (is it running?)\n" }.joined())
        let empty = try runLHT(["health", "--planner", "tcp://127.0.0.1:7311,"])
        #expect(empty.status == 2)
        #expect(empty.stderr.contains("--planner: \"tcp://127.0.0.1:7311,\" has an empty endpoint in its list"), "\(empty.stderr)")
    }
}
