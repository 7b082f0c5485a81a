import Foundation
import LHTClient
import LHTSchema
import Logging
import Testing
@testable import ServiceHost

/// The pieces of PROTOCOL "Operations" that need no process: flag parsing, log lines, the exposition.
@Suite struct OperationsTests {
    @Test func metricsAddresses() throws {
        #expect(try MetricsAddress(nil, service: .reminderPlanner) == .http(host: "127.0.0.1", port: 7319, explicit: false))
        #expect(try MetricsAddress("off", service: .notifier) == .off)
        #expect(try MetricsAddress("localhost:0", service: .notifier) == .http(host: "127.0.0.1", port: 0, explicit: true))
        #expect(try MetricsAddress("[::1]:9000", service: .notifier) == .http(host: "::1", port: 9000, explicit: true))
        #expect(try MetricsAddress("[::1]:9000", service: .notifier).description == "[::1]:9000")
        for bad in ["7309", "127.0.0.1", "127.0.0.1:70000", "example.com:80", "http://127.0.0.1:7309", "[nope]:1"] {
            #expect(throws: (any Error).self, "\(bad)") { try MetricsAddress(bad, service: .notifier) }
        }
        #expect(ServiceName.allCases.map(\.defaultMetricsAddress) == ["127.0.0.1:7309", "127.0.0.1:7319", "127.0.0.1:7329", "127.0.0.1:7339"])
    }

    @Test func jsonLogLineHasTheFourFieldsAndTheMetadata() throws {
        let time = Date(timeIntervalSince1970: 1_795_000_000.0425)
        let line = ServiceLogHandler.format(.json, time: time, level: .warning, service: "notifier", message: "refused \"x\"\n",
                                            metadata: ["op": "reminder.get", "userId": "alice", "message": "shadowed"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["time"] == "2026-11-18T11:06:40.042Z")
        #expect(object["level"] == "warning")
        #expect(object["service"] == "notifier")
        #expect(object["message"] == "refused \"x\"\n")
        #expect(object["op"] == "reminder.get")
        #expect(object["userId"] == "alice")
        #expect(object["metadata.message"] == "shadowed")
        #expect(!line.contains("\n"))
        let text = ServiceLogHandler.format(.text, time: time, level: .info, service: "notifier", message: "hello", metadata: ["a": "1"])
        #expect(text == "2026-11-18T11:06:40.042Z info notifier: hello a=1")
    }

    @Test func exposeHasHelpForEveryFamilyAndProcessMetrics() {
        let metrics = PrometheusMetrics()
        let counter = metrics.registry.makeCounter(name: "lht_decisions_total", labels: [("kind", "due")])
        counter.increment()
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains("# HELP lht_decisions_total Occurrences decided"))
        #expect(text.contains("lht_decisions_total{kind=\"due\"} 1"))
        #expect(text.contains("# TYPE process_open_fds gauge"))
        let types = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.count
        let helps = text.split(separator: "\n").filter { $0.hasPrefix("# HELP ") }.count
        #expect(types == helps)
    }

    @Test func notifyWithoutSocketIsANoOp() {
        #expect(SystemdNotify.send("READY=1", socket: nil) == false)
        #expect(SystemdNotify.send("READY=1", socket: "relative/path") == false)
    }
}
