import Foundation
import LHTSchema
import TestSupport
import ZeroMQ

/// `bench gateway` (b): many SSE streams open at once over plain sockets, read by one thread with poll.
enum GatewayStreams {
    static func measure(_ rig: GatewayBenchmark.Rig, streams count: Int, samples: Int) throws {
        // Eight streams per token at most: a user, and a token, for every eight streams.
        let users = (0..<(count + 7) / 8).map { "stream\($0)" }
        let tokens = try users.map { try rig.token($0) }
        try rig.waitForToken(tokens.last!)
        // Warm: one stream opened and closed, so the first-use allocations are not counted per stream.
        let warm = try Connection(port: rig.port, token: tokens[0])
        try warm.waitFor("id: ", timeout: 10)
        warm.close()
        Thread.sleep(forTimeInterval: 0.5)  // the closed stream's memory freed before the baseline is read
        let before = rig.gatewayMegabytes
        var open: [Connection] = []
        let opening = Date()
        for index in 0..<count { open.append(try Connection(port: rig.port, token: tokens[index / 8])) }
        // Every stream has had its start (the `id:` after its replay): all are open in the gateway.
        for connection in open { try connection.waitFor("id: ", timeout: 60) }
        let opened = Date().timeIntervalSince(opening)
        Thread.sleep(forTimeInterval: 0.5)  // the streams' first sends settled before memory is read
        let after = rig.gatewayMegabytes
        print("\(count) SSE streams open at once (\(users.count) tokens × 8), opened in \(String(format: "%.1f", opened)) s")
        print(String(format: "  gateway VmRSS %.1f MB before, %.1f MB with them open: %.1f KB a stream", before, after, (after - before) * 1024 / Double(count)))

        // session.log for the first user, straight at the logger; the time until its event is on one of that user's streams.
        let measured = open[0], siblings = open[1..<min(8, open.count)]
        let credentials = try rig.adminCredentials()
        let socket = try Socket(rig.context, .dealer)
        try socket.secure(with: credentials)
        try socket.setReceiveTimeout(milliseconds: 10_000)
        try socket.connect(rig.logger.endpoints["api"]!)
        var arrivals: [Double] = [], acks: [Double] = []
        // First the acks alone (the baseline), then each event's arrival (its ack read after it).
        for n in 0..<2 * samples {
            let id = RecordID(LoadClients.uuid(n + Int(Date().timeIntervalSince1970) % 1_000_000 * 1000, client: 900))!
            let started = DispatchTime.now().uptimeNanoseconds
            try socket.send(multipart: [Data(), SessionLogBenchmark.sessionLog(n: n, id: id, user: users[0])])
            if n >= samples {
                try measured.waitFor(id.description, timeout: 10)
                arrivals.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
            }
            guard try socket.receiveMultipart() != nil else { throw BenchError("no session.log ack within 10 s") }
            if n < samples {
                acks.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
                measured.drain()
            }
            for sibling in siblings { sibling.drain() }
        }
        let p99 = LoadClients.percentile(arrivals, 0.99)
        print(String(format: "  session.log → its event on a stream, %d in turn while all are open: p50 %.2f ms   p99 %.2f ms",
                     samples, LoadClients.percentile(arrivals, 0.5), p99))
        print(String(format: "  baseline, the same session.log's ack over ZeroMQ: p50 %.2f ms   p99 %.2f ms", LoadClients.percentile(acks, 0.5), LoadClients.percentile(acks, 0.99)))
        Target.report(String(format: "session.log → its event on an open stream, p99 %.2f ms", p99),
                      ratio: String(format: "%.1f × its ack over ZeroMQ p99", p99 / LoadClients.percentile(acks, 0.99)), target: "p99 ≤ 50 ms", met: p99 <= 50)
        for connection in open { connection.close() }
    }

    /// The status of the one request `text` sent on a connection of its own.
    static func status(port: Int, _ text: String) throws -> Int {
        let connection = try Connection(port: port, request: text)
        defer { connection.close() }
        let statusLine = try connection.waitFor("\r\n", timeout: 10)
        return Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// One HTTP/1.1 connection with its request sent; what arrives is read on demand.
    final class Connection {
        private var descriptor: Int32
        private(set) var received = ""

        convenience init(port: Int, token: String) throws {
            try self.init(port: port, request: "GET /v1/events?types=session.logged HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer \(token)\r\n\r\n")
        }

        init(port: Int, request: String) throws {
            descriptor = try connectLoopback(port: port)
            let bytes = Array(request.utf8)
            _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Reads until `text` has arrived; returns what came before it, and drops that and it (the next wait starts after it).
        @discardableResult func waitFor(_ text: String, timeout: TimeInterval) throws -> String {
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                if let range = received.range(of: text) {
                    let before = String(received[..<range.lowerBound])
                    received.removeSubrange(..<range.upperBound)
                    return before
                }
                guard Date() < deadline else { throw BenchError("\"\(text)\" did not arrive within \(timeout) s: \(received.suffix(300))") }
                var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 50) > 0 { read() }
            }
        }

        /// Takes whatever has arrived, without waiting.
        func drain() {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            while poll(&ready, 1, 0) > 0, read() > 0 {}
            received = ""
        }

        @discardableResult private func read() -> Int {
            var buffer = [UInt8](repeating: 0, count: 16_384)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 { received += String(decoding: buffer[0..<count], as: UTF8.self) }
            return count
        }

        func close() {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }

        deinit { close() }
    }
}
