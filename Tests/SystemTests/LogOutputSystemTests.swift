import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// PROTOCOL "Operations", logs: the JSON lines a real process writes, and log flags it cannot use.
@Suite struct LogOutputSystemTests {
    @Test func jsonLogLinesOfARealProcess() throws {
        let errors = temporaryDirectory("lht-ops").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", arguments: ["--log-format", "json", "--metrics", "off"],
                                        environment: ["LHT_LOG_LEVEL": "debug"], errorLog: errors)
        // An intake message that is not a request: rejected, logged at notice with its reason.
        let context = try Context()
        let publisher = try Socket(context, .pub)
        try publisher.connect(logger.endpoints["intake"]!)
        // Sent again now and then until the subscription is through; at the deadline the expectations below say what is missing.
        try? waitUntil(timeout: 10, interval: 0.1, "the intake message rejected") {
            if ((try? String(contentsOf: errors, encoding: .utf8)) ?? "").contains("intake message rejected") { return true }
            _ = try publisher.send(multipart: [Data("intake".utf8), Data("not json".utf8)])
            return false
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
}
