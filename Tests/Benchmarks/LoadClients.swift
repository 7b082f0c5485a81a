import Foundation
import LHTClient
import LHTSchema
import ServiceHost
import Synchronization
import ZeroMQ

/// Pipelined DEALER clients and a ROUTER echo baseline, shared by the request/reply benchmarks.
enum LoadClients {
    /// Replies per second for all clients, and each request's round trip under that load (ms).
    struct Load {
        let rate: Double
        let latencies: [Double]
        var p50: Double { percentile(latencies, 0.5) }
        var p99: Double { percentile(latencies, 0.99) }
    }

    static func throughput(endpoint: String, context: Context, clients: Int, window: Int,
                           credentials: @escaping @Sendable (_ client: Int) -> CurveCredentials? = { _ in nil },
                           frames: @escaping @Sendable (_ client: Int) -> [Data]) -> Double {
        load(endpoint: endpoint, context: context, clients: clients, window: window, credentials: credentials, frames: frames).rate
    }

    /// Runs `clients` DEALER threads against `endpoint`; each sends its frames keeping up to
    /// `window` requests in flight and times each reply (a DEALER's replies come in request order).
    /// With `credentials` (per client) the clients speak CurveZMQ.
    static func load(endpoint: String, context: Context, clients: Int, window: Int,
                     credentials: @escaping @Sendable (_ client: Int) -> CurveCredentials? = { _ in nil },
                     frames: @escaping @Sendable (_ client: Int) -> [Data]) -> Load {
        let allLatencies = Mutex<[Double]>([])
        let rate = timedThreads(clients: clients) { client, go in
            let requests = frames(client)
            guard let socket = try? Socket(context, .dealer), (try? socket.setReceiveTimeout(milliseconds: 10_000)) != nil,
                  (try? socket.secure(with: credentials(client))) != nil, (try? socket.connect(endpoint)) != nil else { return 0 }
            go()
            var sent = 0, received = 0
            var sentAt = [UInt64](repeating: 0, count: requests.count)
            var latencies: [Double] = []
            latencies.reserveCapacity(requests.count)
            while received < requests.count {
                while sent < requests.count && sent - received < window {
                    sentAt[sent] = DispatchTime.now().uptimeNanoseconds
                    _ = try? socket.send(multipart: [Data(), requests[sent]])
                    sent += 1
                }
                guard (try? socket.receiveMultipart()) != nil else { break }
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - sentAt[received]) / 1_000_000)
                received += 1
            }
            allLatencies.withLock { $0 += latencies }
            return received
        }
        return Load(rate: rate, latencies: allLatencies.withLock { $0 })
    }

    /// As `load`, for a time instead of a count (to set beside a tool that runs for one, as pgbench
    /// does): each client sends `frame(n, client)` for n = 0, 1, … keeping up to `window` in flight
    /// until `seconds` have passed since the clock started, then waits for the replies still due.
    /// `frame` runs while the clock runs, so it should be cheap.
    static func load(endpoint: String, context: Context, clients: Int, window: Int, seconds: Double,
                     frame: @escaping @Sendable (_ n: Int, _ client: Int) -> Data) -> Load {
        let allLatencies = Mutex<[Double]>([])
        let rate = timedThreads(clients: clients) { client, go in
            guard let socket = try? Socket(context, .dealer), (try? socket.setReceiveTimeout(milliseconds: 10_000)) != nil,
                  (try? socket.connect(endpoint)) != nil else { return 0 }
            go()
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
            var sentAt: [UInt64] = [], latencies: [Double] = []
            while true {
                while sentAt.count - latencies.count < window && DispatchTime.now().uptimeNanoseconds < deadline {
                    let request = frame(sentAt.count, client)
                    sentAt.append(DispatchTime.now().uptimeNanoseconds)
                    _ = try? socket.send(multipart: [Data(), request])
                }
                guard latencies.count < sentAt.count, (try? socket.receiveMultipart()) != nil else { break }
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - sentAt[latencies.count]) / 1_000_000)
            }
            allLatencies.withLock { $0 += latencies }
            return latencies.count
        }
        return Load(rate: rate, latencies: allLatencies.withLock { $0 })
    }

    /// One thread per client running `client`, which connects, calls `go()` (which returns once every
    /// client is connected and the clock has started) and returns how many replies it counted.
    /// Returns the replies per second of all clients together. Whatever the transport: the DEALERs
    /// above and the Redis anchor's RESP connections are timed alike.
    static func timedThreads(clients: Int, _ client: @escaping @Sendable (_ index: Int, _ go: () -> Void) -> Int) -> Double {
        let done = DispatchGroup()
        let total = Atomic<Int>(0)
        let ready = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        for index in 0..<clients {
            done.enter()
            Thread {
                var started = false
                // A client that fails before `go()` still counts as ready, or the others would wait forever.
                defer { if !started { ready.signal() }; done.leave() }
                total.add(client(index) { started = true; ready.signal(); go.wait() }, ordering: .relaxed)
            }.start()
        }
        for _ in 0..<clients { ready.wait() }
        Thread.sleep(forTimeInterval: 0.2)  // connections settle before the clock starts
        let start = Date()
        for _ in 0..<clients { go.signal() }
        done.wait()
        return Double(total.load(ordering: .relaxed)) / Date().timeIntervalSince(start)
    }

    /// How long a paced client polls for replies before its next send is due, rounded up to libzmq's
    /// milliseconds: a 0 ms poll returns at once, and the client spun a core
    /// through the last millisecond before every send, taking it from the services it timed. So a
    /// send may leave up to 1 ms after it was due; each request is timed from when it left.
    static func pollMilliseconds(until deadline: UInt64, from now: UInt64) -> Int {
        deadline > now ? Int((deadline - now + 999_999) / 1_000_000) : 0
    }

    /// Sends `count` requests at `rate` per second from one DEALER, draining replies between sends
    /// on the same thread, and returns each request's round-trip latency in milliseconds.
    static func latencies(endpoint: String, context: Context, rate: Double, count: Int,
                          frame: @escaping @Sendable (Int) -> Data) -> [Double] {
        let result = Mutex<[Double]>([])
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { finished.signal() }
            guard let socket = try? Socket(context, .dealer), (try? socket.connect(endpoint)) != nil else { return }
            Thread.sleep(forTimeInterval: 0.2)  // the connection settles before the clock starts
            var sentAt: [Int: UInt64] = [:]
            var latencies: [Double] = []
            func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
            func drain(until deadline: UInt64) {
                repeat {
                    let current = now()
                    guard let ready = try? Poller.readable([socket], timeoutMilliseconds: pollMilliseconds(until: deadline, from: current)),
                          ready[0] else { continue }
                    while let frames = try? socket.receiveMultipart(dontWait: true), let body = frames.last {
                        if let tag = LoadClients.tag(in: body), let sent = sentAt.removeValue(forKey: tag) {
                            latencies.append(Double(now() &- sent) / 1_000_000)
                        }
                    }
                } while now() < deadline && !(sentAt.isEmpty && latencies.count == count)
            }
            let interval = UInt64(1_000_000_000 / rate)
            let begin = now()
            for n in 0..<count {
                drain(until: begin + UInt64(n) * interval)
                sentAt[n] = now()
                _ = try? socket.send(multipart: [Data(), frame(n)])
            }
            drain(until: now() + 3_000_000_000)
            result.withLock { $0 = latencies }
        }
        thread.start()
        finished.wait()
        return result.withLock { $0 }
    }

    /// `request` as the request frame `ServiceClient` sends for `op`, built ahead for clients that
    /// pipeline raw DEALER sockets (what these benchmarks time beside the echo).
    static func frame<Request, Reply>(_ op: Op<Request, Reply>, _ request: Request) -> Data {
        guard let frame = try? WireJSON.encode(RequestFrame(op: op.name, data: request)) else {
            fatalError("the \(op.name) request cannot be encoded")
        }
        return frame
    }

    /// Requests carry their number as the `idN` suffix of a UUID (`…-00000000NNNN`), which both the
    /// echo and the session logger's receipt give back.
    static func tag(in reply: Data) -> Int? {
        guard let text = String(data: reply, encoding: .utf8), let range = text.range(of: "-8000-") else { return nil }
        return Int(text[range.upperBound...].prefix(12))
    }

    static func uuid(_ n: Int, client: Int = 0) -> String {
        String(format: "%08x-0000-4000-8000-%012d", client, n)
    }

    /// A ROUTER on its own thread that sends every request straight back: the floor any service
    /// on the same sockets can reach. Returns its endpoint and a stop signal.
    ///
    /// With `log`, a durable echo: the requests read at once (up to a batch's limit) are appended to
    /// that file, length-prefixed, and synced (`fdatasync`) before their replies go back. That is a
    /// log of its own with nothing else: what a service that stored each request as one record in
    /// an append-only file, on these sockets, could reach at most. With a `projection` too, each synced
    /// batch is handed to it once its replies left.
    static func startEcho(context: Context, log: String? = nil, projection: EchoProjection? = nil) -> (endpoint: String, stop: @Sendable () -> Void) {
        let endpoint = Mutex<String?>(nil)
        let bound = DispatchSemaphore(value: 0)
        let stopping = Atomic<Bool>(false)
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { ended.signal() }
            guard let router = try? Socket(context, .router), let bound_ = try? router.bind("tcp://127.0.0.1:*") else { bound.signal(); return }
            try? router.setReceiveHighWaterMark(100_000)
            try? router.setSendHighWaterMark(100_000)
            endpoint.withLock { $0 = bound_ }
            bound.signal()
            let file = log.map { open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600) }
            defer { if let file { close(file) } }
            while !stopping.load(ordering: .relaxed) {
                guard let ready = try? Poller.readable([router], timeoutMilliseconds: 100), ready[0] else { continue }
                guard let file else {
                    while let frames = try? router.receiveMultipart(dontWait: true) { _ = try? router.send(multipart: frames, dontWait: true) }
                    continue
                }
                var batch: [[Data]] = [], appended = Data()
                while batch.count < ServiceHost.batchLimit, let frames = try? router.receiveMultipart(dontWait: true) {
                    batch.append(frames)
                    withUnsafeBytes(of: UInt32(frames.last?.count ?? 0).littleEndian) { appended.append(contentsOf: $0) }
                    appended.append(frames.last ?? Data())
                }
                let written = appended.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
                precondition(written == appended.count && fdatasync(file) == 0, "the durable echo's log: errno \(errno)")
                for frames in batch { _ = try? router.send(multipart: frames, dontWait: true) }
                projection?.apply(batch.compactMap(\.last))
            }
        }
        thread.start()
        bound.wait()
        // Stopped once its thread has ended: a projection has been handed every batch.
        return (endpoint.withLock { $0 } ?? "", {
            stopping.store(true, ordering: .relaxed)
            ended.wait()
        })
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}

