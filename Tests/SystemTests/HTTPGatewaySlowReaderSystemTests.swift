import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// A client that opens an event stream and never reads it: the gateway cuts that stream once 1,000
/// events wait for it, its memory stays bounded, and the same user's other stream misses nothing.
@Suite(.serialized) struct HTTPGatewaySlowReaderSystemTests {
    static let flood = 4000, step = 250

    /// `count` sessions of alice, a minute apart from the `first`th, logged straight at the session-logger by four clients at once.
    func logSessions(_ rig: GatewayRig, from first: Int = 0, count: Int) throws {
        let endpoint = rig.system.logger.api, context = rig.system.context
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { part in
            do {
                let client = try WireClient(endpoint, context: context)
                for index in stride(from: first + part, to: first + count, by: 4) {
                    _ = try client.ok("session.log", Sessions.session(user: "alice", index: index))
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let failed = failures.withLock { $0 }
        guard failed.isEmpty else { throw HarnessError("session.log failed: \(failed)") }
    }

    func sessionEvents(in text: String) -> Int { text.components(separatedBy: "event: session.logged\n").count - 1 }

    @Test func aReaderThatNeverReadsIsCutOffWhileAnotherStreamGetsEverything() throws {
        let rig = try GatewayRig(services: [], keys: false, gatewayArguments: ["--keepalive-seconds", "300", "--metrics", "127.0.0.1:0"])
        let query = "/v1/events?types=session.logged&userId=alice"
        let reading = try rig.stream("?types=session.logged&userId=alice", token: nil)
        try reading.waitUntil("the reading stream opened") { reading.output.contains("id: ") }
        let pid = rig.gateway.process.pid
        let before = try #require(residentBytes(of: pid))

        let stalled = try StalledReader(port: rig.port)
        try stalled.send("GET \(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        // The stalled stream is open (its slot taken) before the flood: a 9th request would be refused otherwise.
        try waitUntil(timeout: 15, interval: 0.05, "the stalled stream opened") {
            GatewayRig.value(try rig.scrape(), "lht_event_streams_open") >= 2
        }

        // The flood in steps the reading stream keeps up with (on a loaded machine a reader that
        // reads can lag too, and 1,000 events behind it would be cut as well): only the stalled
        // one falls behind.
        let started = Date()
        for first in stride(from: 0, to: Self.flood, by: Self.step) {
            try logSessions(rig, from: first, count: Self.step)
            try reading.waitUntil("sessions up to \(first + Self.step) on the reading stream", timeout: 60) {
                sessionEvents(in: reading.output) == first + Self.step
            }
        }
        let logged = Date().timeIntervalSince(started)
        let after = try #require(residentBytes(of: pid))

        // The stalled stream was cut: drained now, it ends (the gateway closed it) short of the flood.
        let (closed, received) = stalled.drain(timeout: 10)
        let got = sessionEvents(in: String(decoding: received, as: UTF8.self))
        #expect(closed, "the gateway kept the stalled stream open; it had \(got) of \(Self.flood) events")
        #expect(got < Self.flood - 1000, "the stalled stream got \(got) of \(Self.flood) events")
        #expect(GatewayRig.value(try rig.scrape(), "lht_event_streams_cut_off_total") == 1)
        // Bounded: a stream holds at most 1,000 waiting events; the flood itself must not stay in memory.
        let grown = after - before
        #expect(grown < 24 << 20, "the gateway grew by \(grown >> 20) MiB during the flood (\(before >> 20) -> \(after >> 20) MiB)")
        print("slow reader: \(Self.flood) sessions in \(String(format: "%.1f", logged)) s; stalled stream got \(got) before the cut; RSS \(before >> 10) -> \(after >> 10) KiB")
        // The reading stream goes on: one more session arrives.
        try logSessions(rig, from: Self.flood, count: 1)
        try reading.waitUntil("the session after the flood") { sessionEvents(in: reading.output) == Self.flood + 1 }
        reading.terminate()
    }
}
