import Foundation
import Testing

/// The gateway's own `/metrics`: requests by route and status class with their duration, open
/// streams, streams cut off, refused tokens; a scrape promtool accepts.
@Suite(.serialized) struct HTTPGatewayMetricsSystemTests {
    @Test func requestsStreamsAndRefusalsAreCounted() throws {
        let rig = try GatewayRig(services: [.planner], keys: true, gatewayArguments: ["--metrics", "127.0.0.1:0"])
        let token = try rig.addToken("alice")
        let before = try rig.scrape()
        let ok = ["route": "user.get", "status": "2xx"]
        for _ in 0..<3 { #expect(try rig.post("user.get", "{}", token: token).status == 200) }
        #expect(try rig.post("no.such.op", "{}", token: token).status == 404)
        #expect(try rig.post("user.get", "{}", token: "lht_wrong").status == 401)
        let stream = try rig.stream("?types=reminder.changed", token: token)
        try stream.waitUntil("the stream opened") { stream.output.contains("id: ") }

        let during = try rig.scrape()
        #expect(GatewayRig.value(during, "lht_http_requests_total", ok) - GatewayRig.value(before, "lht_http_requests_total", ok) == 3)
        #expect(GatewayRig.value(during, "lht_http_requests_total", ["route": "unknown", "status": "4xx"]) == 1)
        #expect(GatewayRig.value(during, "lht_http_requests_total", ["route": "events", "status": "2xx"]) == 1)
        #expect(GatewayRig.value(during, "lht_auth_refused_total", ["reason": "token"]) - GatewayRig.value(before, "lht_auth_refused_total", ["reason": "token"]) == 1)
        #expect(GatewayRig.value(during, "lht_http_request_duration_seconds_count", ["route": "user.get"]) >= 3)
        #expect(GatewayRig.value(during, "lht_event_streams_open") == 1)

        // The reader hangs up: the stream is closed at once, and so is its gauge.
        stream.terminate()
        var after = ""
        try waitUntil(timeout: 3, interval: 0.05, "the hung-up stream's gauge back at 0") {
            after = try rig.scrape()
            return GatewayRig.value(after, "lht_event_streams_open") == 0
        }
        #expect(after.contains("\n# TYPE lht_event_streams_cut_off_total counter"))

        try Tools.require("promtool")
        let check = try Tools.run("promtool", ["check", "metrics"], input: Data(after.utf8))
        #expect(check.status == 0, "\(check.output)")
    }
}
