import Foundation
import Glibc
import Synchronization
import TestSupport

/// An anchor outside our code for `session.log` throughput: Redis appending each write to its
/// append-only file and fsyncing it before the reply (`--appendfsync always`; Redis fsyncs once per
/// event-loop turn, so concurrent clients share a sync, as the logger's batch commit shares one).
/// `bench writes` starts its own redis-server on a free loopback port and a temporary directory and
/// stops it again. The client is plain RESP over POSIX sockets, pipelined like the DEALERs.
enum RedisAnchor {
    /// XADD replies per second from `clients` threads, each with `window` commands in flight and each
    /// command carrying one of `fields(client)` as its value; nil (and a line saying so) without redis-server.
    static func xaddRate(clients: Int, window: Int, fields: @escaping @Sendable (_ client: Int) -> [Data]) throws -> Double? {
        guard let server = try RedisServer.start(for: "redis anchor") else { return nil }
        // Deferred, so a failure stops it too.
        defer { server.stop() }
        let port = server.port

        let failure = Mutex<String?>(nil)
        let rate = LoadClients.timedThreads(clients: clients) { client, go in
            let commands = fields(client).map(xadd)
            guard let connection = try? TCPConnection(port: port) else { return 0 }
            go()
            var replies = Replies()
            var sent = 0
            do {
                while replies.count < commands.count {
                    let end = min(commands.count, replies.count + window)
                    if sent < end {
                        try connection.send(commands[sent..<end].flatMap { $0 })
                        sent = end
                    }
                    try connection.receive(into: &replies.buffer)
                    replies.parse()
                }
                if let error = replies.firstError { throw BenchError("redis: \(error)") }
            } catch {
                failure.withLock { $0 = $0 ?? "\(error)" }
            }
            return replies.count
        }
        if let message = failure.withLock({ $0 }) { throw BenchError(message) }
        return rate
    }

    /// An XADD of `frame` to the stream the anchors write.
    static func xadd(_ frame: Data) -> [UInt8] { command(["XADD", "lht-bench", "*", "frame"].map { Data($0.utf8) } + [frame]) }

    /// A RESP array of bulk strings, as redis-cli sends a command.
    static func command(_ arguments: [Data]) -> [UInt8] {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments { bytes += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10] }
        return bytes
    }

    /// Counts complete replies as they arrive: bulk strings (XADD's entry id) and one-line ones
    /// (`+`, `-`, `:`); the first error is kept.
    struct Replies {
        var buffer: [UInt8] = []
        private(set) var count = 0
        private(set) var firstError: String?

        mutating func parse() {
            var position = 0
            while let lineEnd = crlf(from: position) {
                var next = lineEnd + 2
                if buffer[position] == UInt8(ascii: "$"), let length = Int(String(decoding: buffer[(position + 1)..<lineEnd], as: UTF8.self)), length >= 0 {
                    guard next + length + 2 <= buffer.count else { break }
                    next += length + 2
                } else if buffer[position] == UInt8(ascii: "-"), firstError == nil {
                    firstError = String(decoding: buffer[position..<lineEnd], as: UTF8.self)
                }
                count += 1
                position = next
            }
            buffer.removeFirst(position)
        }

        private func crlf(from start: Int) -> Int? {
            var index = start
            while index + 1 < buffer.count {
                if buffer[index] == 13 && buffer[index + 1] == 10 { return index }
                index += 1
            }
            return nil
        }
    }

    /// Waits until the server answers PING (it loads and opens its append-only file first).
    static func awaitPong(port: UInt16, server: ChildProcess) throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && server.isRunning {
            if let connection = try? TCPConnection(port: port), (try? connection.send(command([Data("PING".utf8)]))) != nil {
                var reply: [UInt8] = []
                if (try? connection.receive(into: &reply)) != nil, reply.starts(with: Array("+PONG".utf8)) { return }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BenchError("redis-server did not answer PING on port \(port)")
    }

    /// A port the OS has just handed out on 127.0.0.1 (bound to port 0, read back, released).
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = TCPConnection.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 ? getsockname(descriptor, $0, &length) : -1 }
        }
        guard status == 0 else { throw BenchError("bind 127.0.0.1:0: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    static func executableOnPath(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A redis-server of its own: a port the OS hands out on 127.0.0.1, a temporary directory, every
/// write appended to its append-only file and fsynced before the reply (`--appendfsync always`).
final class RedisServer: Sendable {
    let port: UInt16
    private let process: ChildProcess
    var pid: pid_t { process.pid }

    /// A server that answers PING; nil, and a line saying what `purpose` skips, without redis-server on PATH.
    static func start(for purpose: String) throws -> RedisServer? {
        guard let executable = RedisAnchor.executableOnPath("redis-server") else {
            print("\(purpose): skipped (no redis-server on PATH; deploy/install-prerequisites --bench installs it)")
            return nil
        }
        return try RedisServer(executable)
    }

    private init(_ executable: String) throws {
        port = try RedisAnchor.freePort()
        process = try ChildProcess(executable, [
            "--port", "\(port)", "--bind", "127.0.0.1", "--dir", temporaryDirectory("lht-bench-redis").path,
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--loglevel", "warning",
        ], stdout: .null)
        do {
            try RedisAnchor.awaitPong(port: port, server: process)
        } catch {
            stop()
            throw error
        }
    }

    /// SIGTERM: a clean shutdown for redis (no RDB with --save "").
    func stop() {
        process.terminate()
        _ = process.wait()
    }
}

/// Redis beside a soak (`bench soak --redis`): a thread of its own sends XADDs of the soak's records
/// at the rate the soak logs them, an open loop on one connection (each at its due time, whatever
/// the replies do), and another reads the replies and keeps each one's time (ms) from when its
/// request was due, by the soak's window, as the soak times its requests. Redis replies once the
/// write is fsynced, as the logger acks, so a window this probe misses is one in which an ack that
/// waits for the disk missed at the logger's rate on this disk, written by someone else. Its syncs
/// add to the disk's load.
final class RedisProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var latencies: WindowedLatencies  // under `lock`
    private var inFlight: [UInt64] = []  // under `lock`: due times in request order, as replies come
    private var stopping = false        // under `lock`
    private var failure: String?        // under `lock`
    private let connection: TCPConnection
    private let finished = DispatchGroup()

    /// `frame(n)`: the value of XADD `n`.
    init(server: RedisServer, rate: Double, frame: @escaping @Sendable (Int) -> Data, windows: Int, windowSeconds: Double,
         begin: UInt64) throws {
        latencies = WindowedLatencies(windows: windows, windowSeconds: windowSeconds, begin: begin)
        connection = try TCPConnection(port: server.port)
        let interval = UInt64(1e9 / rate)
        spawn("redis-probe-send") { [self] in
            var sent = 0
            while !lock.withLock({ stopping }) {
                let due = begin + UInt64(sent) * interval, now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }  // a paced writer: one record when due
                lock.withLock { inFlight.append(due) }
                try connection.send(RedisAnchor.xadd(frame(sent)))
                sent += 1
            }
        }
        spawn("redis-probe-receive") { [self] in
            var replies = RedisAnchor.Replies()
            while lock.withLock({ !stopping || !inFlight.isEmpty }) {
                let before = replies.count
                try connection.receive(into: &replies.buffer)
                replies.parse()
                if let error = replies.firstError { throw BenchError("redis: \(error)") }
                let done = DispatchTime.now().uptimeNanoseconds
                lock.withLock { for _ in before..<replies.count { latencies.record(due: inFlight.removeFirst(), done: done) } }
            }
        }
    }

    /// A failure once `stop` was called (the receiver's connection shut down under it) is not one.
    private func spawn(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
        finished.enter()
        let thread = Thread { [self] in
            defer { finished.leave() }
            do { try body() } catch { lock.withLock { if !stopping { failure = failure ?? "\(error)" } } }
        }
        thread.name = name
        thread.start()
    }

    /// Ends the probe once the replies due have come (3 s at most); its latencies by window. A probe
    /// that failed says so, and its windows from then on stay empty.
    func stop() -> [[Double]] {
        lock.withLock { stopping = true }
        if finished.wait(timeout: .now() + 3) == .timedOut {
            shutdown(connection.descriptor, Int32(SHUT_RDWR))  // the receiver's recv returns
            finished.wait()
        }
        return lock.withLock {
            if let failure { print("redis probe: stopped early: \(failure)") }
            return latencies.byWindow
        }
    }
}

/// A blocking TCP connection to 127.0.0.1, owned by one thread: all the anchor's client needs.
final class TCPConnection {
    let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var address = Self.loopback(port: port)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            close(descriptor)
            throw BenchError("connect 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        // Each batch goes out at once (no Nagle delay), and a silent server ends the run instead of hanging it.
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw BenchError("send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Appends what has arrived (at least one byte, waiting for it) to `buffer`.
    func receive(into buffer: inout [UInt8]) throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let received = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard received > 0 else { throw BenchError(received == 0 ? "connection closed" : "recv: \(String(cString: strerror(errno)))") }
        buffer += chunk[..<received]
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
