import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// Requests are at most 1 MB, and a batch is bounded in bytes: memory follows the limits, not the
/// clients (it used to take 16 MB frames, 512 to a batch).
@Suite struct RequestSizeSystemTests {
    /// The peak resident memory of a process, from /proc (VmHWM), in bytes.
    static func peakResident(_ pid: Int32) -> Int64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else { return nil }
        return kilobytes * 1024
    }

    @Test func anOversizedRequestGetsNoReplyAndTheServiceKeepsAnswering() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        let big = try WireClient(logger.api, context: context)
        // Over 1 MB: libzmq drops the connection before the service sees it.
        #expect(throws: (any Error).self) { try big.raw(Data(repeating: UInt8(ascii: " "), count: (1 << 20) + 1), timeoutMilliseconds: 1000) }
        // Just under: read, and answered as the JSON it is not.
        let fits = try WireClient(logger.api, context: context)
        let reply = try JSONDecoder().decode(JSONValue.self, from: fits.raw(Data(repeating: UInt8(ascii: "x"), count: (1 << 20) - 64)))
        #expect(reply["error"]?["code"]?.stringValue == "bad_json")
        #expect(try fits.ok("health")["service"]?.stringValue == "session-logger")
    }

    @Test func manyClientsPipeliningLargeFramesStayWithinMemory() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        let clients = 16, framesEach = 8
        let frame = Data(repeating: UInt8(ascii: " "), count: 3 << 19)  // 1.5 MB: refused at the transport
        var sockets: [Socket] = []
        for _ in 0..<clients {
            let socket = try Socket(context, .dealer)
            try socket.connect(logger.api)
            for _ in 0..<framesEach { try socket.send(multipart: [Data(), frame]) }
            sockets.append(socket)
        }
        Thread.sleep(forTimeInterval: 1)
        let client = try WireClient(logger.api, context: context)
        #expect(try client.ok("health")["service"]?.stringValue == "session-logger")
        let peak = try #require(Self.peakResident(logger.process.pid))
        #expect(peak < 300 << 20, "peak resident \(peak >> 20) MB")
    }
}
