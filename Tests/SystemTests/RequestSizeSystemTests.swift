import Foundation
import LHTSchema
import LHTSecurity
import Testing
import TestSupport
import ZeroMQ

/// PROTOCOL "Requests and replies": a request frame is at most 1 MiB; a larger one up to 4 MiB is
/// answered with `invalid_argument` (field `request`), and one over 4 MiB closes its connection, logged
/// and counted. Memory follows these limits, not the clients.
@Suite struct RequestSizeSystemTests {
    static let mebibyte = 1 << 20

    /// The peak resident memory of a process, from /proc (VmHWM), in bytes.
    static func peakResident(_ pid: Int32) -> Int64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
        return kilobytes * 1024
    }

    /// `request` padded with spaces (still valid JSON) to `size` bytes.
    static func padded(_ request: String, to size: Int) -> Data {
        Data(request.utf8) + Data(repeating: UInt8(ascii: " "), count: size - request.utf8.count)
    }

    static let health = #"{"v":1,"op":"health"}"#

    /// `health.counters[name]` asked through `client` until it reaches `least` (or 30 s pass).
    static func counter(_ name: String, of client: WireClient, reaching least: Int64) throws -> Int64 {
        var value: Int64 = 0
        try? waitUntil(timeout: 30, interval: 0.02, "\(name) reaching \(least)") {
            value = try client.ok("health")["counters"]?[name]?.intValue ?? 0
            return value >= least
        }
        return value
    }

    @Test func aRequestOverOneMiBIsAnsweredFromItsSize() throws {
        let logger = try ServiceProcess("session-logger")
        let client = try WireClient(logger.api, context: Context())
        // Exactly 1 MiB is a request like any other.
        let fits = try JSONDecoder().decode(JSONValue.self, from: client.raw(Self.padded(Self.health, to: Self.mebibyte)))
        #expect(fits["data"]?["service"]?.stringValue == "session-logger", "\(fits)")
        // Just over (45 bytes) and exactly 4 MiB: invalid_argument, on the same connection.
        for size in [Self.mebibyte + 45, 4 * Self.mebibyte] {
            let reply = try JSONDecoder().decode(JSONValue.self, from: client.raw(Self.padded(Self.health, to: size)))
            #expect(reply["ok"]?.boolValue == false)
            #expect(reply["error"]?["code"]?.stringValue == "invalid_argument", "\(reply)")
            #expect(reply["error"]?["field"]?.stringValue == "request")
            #expect(reply["error"]?["message"]?.stringValue?.contains("1 MiB (1,048,576 bytes)") == true, "\(reply)")
            #expect(reply["error"]?["message"]?.stringValue?.contains("\(size)") == true, "\(reply)")
        }
        #expect(try client.ok("health")["service"]?.stringValue == "session-logger")
    }

    @Test func aFrameOverFourMiBClosesItsConnectionLoggedAndCounted() throws {
        let errors = temporaryDirectory("lht-size").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", environment: ["LHT_LOG_LEVEL": "info"], errorLog: errors)
        let context = try Context()
        let observer = try WireClient(logger.api, context: context)
        #expect(try observer.ok("health")["counters"]?["apiDisconnects"]?.intValue == 0)
        let big = try WireClient(logger.api, context: context)
        #expect(throws: (any Error).self) { try big.raw(Self.padded(Self.health, to: 4 * Self.mebibyte + 1), timeoutMilliseconds: 1000) }
        #expect(try Self.counter("apiDisconnects", of: observer, reaching: 1) == 1)
        let log = try String(contentsOf: errors, encoding: .utf8)
        #expect(log.contains("api connection closed"), "\(log)")
        #expect(try observer.ok("health")["service"]?.stringValue == "session-logger")
    }

    /// With keys a frame travels 33 bytes longer (CURVE), and the limits are still the request's own.
    @Test func withKeysTheLimitsAreTheSame() throws {
        let keys = try makeKeyDirectory()
        let logger = try ServiceProcess("session-logger", arguments: ["--keys", keys.path, "--metrics", "off"])
        let context = try Context()
        let credentials = try adminCredentials(KeyDirectory(keys.path), .sessionLogger)
        let client = try WireClient(logger.api, context: context, credentials: credentials)
        let reply = try JSONDecoder().decode(JSONValue.self, from: client.raw(Self.padded(Self.health, to: 4 * Self.mebibyte)))
        #expect(reply["error"]?["field"]?.stringValue == "request", "\(reply)")
        let big = try WireClient(logger.api, context: context, credentials: credentials)
        #expect(throws: (any Error).self) { try big.raw(Self.padded(Self.health, to: 4 * Self.mebibyte + 1), timeoutMilliseconds: 1000) }
        #expect(try client.ok("health")["service"]?.stringValue == "session-logger")
    }

    /// 16 clients each pipelining eight 4 MiB frames: every one answered, the peak resident memory
    /// of the service under 300 MB (512 MiB was sent).
    @Test func manyClientsPipeliningFourMiBFramesAreAnsweredWithinMemory() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off"])
        let clients = 16, framesEach = 8
        let frame = Self.padded(Self.health, to: 4 * Self.mebibyte)
        var sockets: [Socket] = []
        for _ in 0..<clients {
            let socket = try Socket(context, .dealer)
            try socket.connect(logger.api)
            for _ in 0..<framesEach { try socket.send(multipart: [Data(), frame]) }
            sockets.append(socket)
        }
        var answered = 0
        let deadline = Date().addingTimeInterval(20)
        for socket in sockets {
            for _ in 0..<framesEach {
                try socket.setReceiveTimeout(milliseconds: Int32(max(1, deadline.timeIntervalSinceNow * 1000)))
                guard let reply = try socket.receiveMultipart()?.last else { break }
                if (try? JSONDecoder().decode(JSONValue.self, from: reply))?["error"]?["field"]?.stringValue == "request" { answered += 1 }
            }
        }
        #expect(answered == clients * framesEach)
        let client = try WireClient(logger.api, context: context)
        #expect(try client.ok("health")["service"]?.stringValue == "session-logger")
        let peak = try #require(Self.peakResident(logger.process.pid))
        print("\(clients) clients × \(framesEach) frames of 4 MiB: peak resident \(peak >> 20) MiB")
        #expect(peak <= 300_000_000, "peak resident \(peak >> 20) MiB")
    }

    /// The intake has no one to answer: a frame over 1 MiB is dropped and counted, one over 4 MiB
    /// closes the publisher's connection (counted), and the intake goes on taking requests.
    @Test func theIntakeDropsAndCountsFramesOverOneMiB() throws {
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off"])
        let context = try Context()
        let client = try WireClient(logger.api, context: context)
        let publisher = try Socket(context, .pub)
        try publisher.connect(logger.endpoints["intake"]!)
        let session = try JSONSerialization.data(withJSONObject: [
            "v": 1, "op": "session.log", "data": Sessions.session(user: "big", index: 0),
        ])
        let oversized = Self.padded(String(decoding: session, as: UTF8.self), to: Self.mebibyte + 1)
        #expect(try Self.publish(oversized, on: publisher, until: "intakeRejected", of: client) >= 1)
        #expect(try client.ok("session.list", ["userId": "big", "from": "2000-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"])["sessions"]?
            .arrayValue.isEmpty == true, "an oversized intake request is not stored")
        try publisher.send(multipart: [Data("intake".utf8), Self.padded("", to: 4 * Self.mebibyte + 1)])
        #expect(try Self.counter("intakeDisconnects", of: client, reaching: 1) >= 1)
        // The publisher reconnects by itself; what it sends next is taken.
        #expect(try Self.publish(session, on: publisher, until: "intakeAccepted", of: client) >= 1)
    }

    /// Publishes `request` on the intake until `counter` is above 0, and returns it: the first ones
    /// may go before the subscription is through (the slow joiner), or while the publisher reconnects.
    static func publish(_ request: Data, on publisher: Socket, until counter: String, of client: WireClient) throws -> Int64 {
        var value: Int64 = 0
        try? waitUntil(timeout: 30, interval: 0.05, "\(counter) above 0") {
            try publisher.send(multipart: [Data("intake".utf8), request])
            value = try client.ok("health")["counters"]?[counter]?.intValue ?? 0
            return value > 0
        }
        return value
    }
}
