import Foundation
import Synchronization
import TestSupport
import ZeroMQ

/// `bench zmq-pubsub [--messages N] [--rounds R]`
///
/// PUB→SUB throughput of 100-byte two-frame messages (a 20-byte topic frame and an 80-byte
/// payload frame) through our ZeroMQ layer, against the same measurement on libzmq directly by
/// `c/zmq_pubsub.c`, which this compiles with `cc` and runs in the same session. The two take
/// turns, C first, for R rounds; the figure that counts is the ratio of the medians, since only a
/// ratio against a baseline from the same run means anything on a noisy machine.
///
/// Both sides are built alike: one context (one I/O thread); a PUB thread that creates its
/// socket, binds `tcp://127.0.0.1:*`, sends probes until the SUB has received one (the slow
/// joiner), then sends N messages and keeps its socket open until the SUB is done (LINGER 0 would
/// discard what is still queued); a SUB thread that creates its socket, subscribes to everything,
/// connects and receives until it has N data messages, checking each one's shape. Both high-water
/// marks are 0, so nothing is dropped, and a run that does not receive exactly N fails. Time runs
/// from just before the PUB's first data send to the SUB's receipt of the last message.
///
/// Each side also reports the CPU time per message of its PUB thread (the sending loop) and its
/// SUB thread (the receiving loop). Those hold up better than throughput when the machine is busy,
/// and show whether our layer's cost is on the sending or the receiving side.
enum ZeroMQPubSub {
    static let topicSize = 20
    static let payloadSize = 80
    static let probeTopic = "probe"
    /// The target (Tests/Benchmarks/README.md): our layer reaches at least this fraction of the C figure.
    static let target = 0.80
    static let receiveTimeoutMilliseconds: Int32 = 10_000

    static func run(_ arguments: [String]) throws {
        let options = try Options(arguments)
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("c/zmq_pubsub.c")
        let program = try compile(source)
        defer { try? FileManager.default.removeItem(at: program.deletingLastPathComponent()) }

        print("zmq-pubsub: PUB→SUB over tcp://127.0.0.1, \(topicSize)+\(payloadSize)-byte two-frame messages,",
              "\(options.messages) per run, \(options.rounds) rounds, libzmq \(zmqVersion())")
        // Untimed warm-up of both, so the first round does not pay for cold caches and page faults.
        let warmUp = max(options.messages / 10, 1)
        _ = try runC(program, messages: warmUp)
        _ = try runSwift(messages: warmUp)

        print("msg/s: messages per second; pub ns, sub ns: CPU time per message of the PUB and SUB threads")
        print(row("round", "c msg/s", "swift msg/s", "swift/c", "c pub ns", "c sub ns", "swift pub ns", "swift sub ns"))
        var c: [Measurement] = [], swift: [Measurement] = []
        for round in 1...options.rounds {
            c.append(try runC(program, messages: options.messages))
            swift.append(try runSwift(messages: options.messages))
            print(row("\(round)", c[round - 1], swift[round - 1], ratio: swift[round - 1].rate / c[round - 1].rate))
        }
        let cMedian = Measurement(median: c), swiftMedian = Measurement(median: swift)
        let ratio = swiftMedian.rate / cMedian.rate
        print(row("median", cMedian, swiftMedian, ratio: ratio))
        Target.report(String(format: "PUB→SUB %.0f msg/s (median)", swiftMedian.rate), ratio: String(format: "%.2f × C on libzmq", ratio),
                      target: String(format: "≥ %.2f × C", target), met: ratio >= target)
    }

    // MARK: Options

    struct Options {
        var messages = 2_000_000
        var rounds = 5

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                if flag == "--quick" {
                    (messages, rounds) = (300_000, 3)
                    continue
                }
                guard flag == "--messages" || flag == "--rounds" else {
                    throw BenchError("unknown argument \(flag); usage: bench zmq-pubsub [--messages N] [--rounds R] [--quick]")
                }
                guard let text = rest.popFirst(), let value = Int(text), value > 0 else {
                    throw BenchError("\(flag) needs a positive whole number")
                }
                if flag == "--messages" { messages = value } else { rounds = value }
            }
        }
    }

    // MARK: The C baseline

    /// Compiles `source` into a fresh temporary directory and returns the executable.
    static func compile(_ source: URL) throws -> URL {
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw BenchError("C baseline not found at \(source.path) (located from this file's #filePath)")
        }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("bench-zmq-pubsub-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let program = directory.appendingPathComponent("zmq_pubsub")
        let (status, _, errors) = try execute(
            "/usr/bin/env", ["cc", "-O2", source.path, "-lzmq", "-lpthread", "-o", program.path])
        guard status == 0 else { throw BenchError("cc failed (\(status)):\n\(errors)") }
        return program
    }

    /// Runs the C program once.
    static func runC(_ program: URL, messages: Int) throws -> Measurement {
        let (status, output, errors) = try execute(program.path, ["\(messages)"])
        guard status == 0 else { throw BenchError("C baseline failed (\(status)): \(errors)") }
        // One line: received=N seconds=S rate=R pub_cpu_ns=P sub_cpu_ns=Q
        let fields = Dictionary(
            output.split(whereSeparator: \.isWhitespace).compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }, uniquingKeysWith: { $1 })
        guard fields["received"] == "\(messages)", let rate = fields["rate"].flatMap(Double.init),
              let pub = fields["pub_cpu_ns"].flatMap(Double.init), let sub = fields["sub_cpu_ns"].flatMap(Double.init)
        else { throw BenchError("unexpected output from the C baseline: \(output)") }
        return Measurement(rate: rate, publisherNanoseconds: pub, subscriberNanoseconds: sub)
    }

    static func execute(_ path: String, _ arguments: [String]) throws -> (Int32, String, String) {
        let run = try CapturedProcess(path, arguments).finish(timeout: 3600)
        return (run.status, run.stdout, run.stderr)
    }

    // MARK: The Swift side

    /// What the two threads share. Each socket stays in the thread that created it.
    final class Run: Sendable {
        let messages: Int
        let endpoint = Mutex<String?>(nil)
        let bound = DispatchSemaphore(value: 0)
        /// The SUB has received a probe: the PUB starts the timed run.
        let joined = Atomic<Bool>(false)
        /// The SUB has every message: the PUB may close its socket.
        let finished = Atomic<Bool>(false)
        /// Either side failed (the first failure is kept): the other stops.
        let failure = Mutex<String?>(nil)
        let failed = Atomic<Bool>(false)
        let start = Mutex<ContinuousClock.Instant?>(nil)
        let end = Mutex<ContinuousClock.Instant?>(nil)
        let received = Atomic<Int>(0)
        /// CPU time of the PUB's sending loop and of the SUB's receiving loop.
        let publisherCPU = Atomic<UInt64>(0)
        let subscriberCPU = Atomic<UInt64>(0)

        init(messages: Int) { self.messages = messages }

        func fail(_ reason: String) {
            failure.withLock { if $0 == nil { $0 = reason } }
            failed.store(true, ordering: .sequentiallyConsistent)
        }

        var hasFailed: Bool { failed.load(ordering: .sequentiallyConsistent) }
    }

    /// Runs the Swift side once.
    static func runSwift(messages: Int) throws -> Measurement {
        let context = try Context()
        let run = Run(messages: messages)
        let threads = DispatchGroup()

        threads.enter()
        Thread {
            defer { threads.leave() }
            do { try publish(context, run) } catch { run.fail("publisher: \(error)") }
            run.bound.signal()  // in case it failed before binding; a second signal is never waited on
        }.start()
        run.bound.wait()
        if let endpoint = run.endpoint.withLock({ $0 }) {
            threads.enter()
            Thread {
                defer { threads.leave() }
                do { try subscribe(context, endpoint, run) } catch { run.fail("subscriber: \(error)") }
                run.finished.store(true, ordering: .sequentiallyConsistent)
            }.start()
        }
        threads.wait()

        if let failure = run.failure.withLock({ $0 }) { throw BenchError("Swift side failed: \(failure)") }
        let received = run.received.load(ordering: .sequentiallyConsistent)
        guard received == messages, let start = run.start.withLock({ $0 }), let end = run.end.withLock({ $0 })
        else { throw BenchError("Swift side received \(received) of \(messages) messages") }
        let elapsed = (end - start).components
        return Measurement(
            rate: Double(messages) / (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18),
            publisherNanoseconds: Double(run.publisherCPU.load(ordering: .sequentiallyConsistent)) / Double(messages),
            subscriberNanoseconds: Double(run.subscriberCPU.load(ordering: .sequentiallyConsistent)) / Double(messages))
    }

    static func publish(_ context: Context, _ run: Run) throws {
        let publisher = try Socket(context, .pub)
        try publisher.setSendHighWaterMark(0)
        let endpoint = try publisher.bind("tcp://127.0.0.1:*")
        run.endpoint.withLock { $0 = endpoint }
        run.bound.signal()

        // Slow joiner: probe until the subscription has reached us and a probe got through.
        let probe = [Data(probeTopic.utf8), Data()]
        var tries = 0
        while !run.joined.load(ordering: .sequentiallyConsistent) && !run.hasFailed {
            tries += 1
            if tries > 10_000 { throw BenchError("the subscriber never joined") }  // ~10 s
            try publisher.send(multipart: probe)
            usleep(1000)
        }

        let message = [Data(repeating: UInt8(ascii: "t"), count: topicSize),
                       Data(repeating: UInt8(ascii: "p"), count: payloadSize)]
        let cpu = threadCPUNanoseconds()
        run.start.withLock { $0 = .now }
        for _ in 0..<run.messages {
            if run.hasFailed { break }
            try publisher.send(multipart: message)
        }
        run.publisherCPU.store(threadCPUNanoseconds() - cpu, ordering: .sequentiallyConsistent)
        // Closing now would discard what is still queued (LINGER 0): wait for the SUB to finish.
        while !run.finished.load(ordering: .sequentiallyConsistent) && !run.hasFailed { usleep(1000) }
    }

    static func subscribe(_ context: Context, _ endpoint: String, _ run: Run) throws {
        let subscriber = try Socket(context, .sub)
        try subscriber.setReceiveHighWaterMark(0)
        try subscriber.setReceiveTimeout(milliseconds: receiveTimeoutMilliseconds)
        try subscriber.subscribe("")
        try subscriber.connect(endpoint)

        var received = 0
        defer { run.received.store(received, ordering: .sequentiallyConsistent) }
        let cpu = threadCPUNanoseconds()
        while received < run.messages && !run.hasFailed {
            // The frames as libzmq holds them, as the C side reads them: nothing copied.
            let isData = try subscriber.withReceivedMultipart { frames in
                guard frames.count == 2 else { throw BenchError("a \(frames.count)-frame message") }
                // A probe is told apart by its topic's size.
                if frames[0].count == probeTopic.utf8.count { return false }
                guard frames[0].count == topicSize, frames[1].count == payloadSize else {
                    throw BenchError("a malformed message: \(frames.map(\.count)) bytes")
                }
                return true
            }
            guard let isData else { throw BenchError("nothing for \(receiveTimeoutMilliseconds) ms after \(received) messages") }
            if isData { received += 1 } else { run.joined.store(true, ordering: .sequentiallyConsistent) }
        }
        run.end.withLock { $0 = .now }
        run.subscriberCPU.store(threadCPUNanoseconds() - cpu, ordering: .sequentiallyConsistent)
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    // MARK: Printing

    struct Measurement {
        /// Messages per second.
        var rate: Double
        /// CPU time per message of the PUB thread's sending loop and the SUB thread's receiving loop.
        var publisherNanoseconds: Double
        var subscriberNanoseconds: Double
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func row(_ round: String, _ c: Measurement, _ swift: Measurement, ratio: Double) -> String {
        let whole = { (value: Double) in String(Int(value.rounded())) }
        return row(round, whole(c.rate), whole(swift.rate), String(format: "%.2f", ratio),
                   whole(c.publisherNanoseconds), whole(c.subscriberNanoseconds),
                   whole(swift.publisherNanoseconds), whole(swift.subscriberNanoseconds))
    }

    static func row(_ columns: String...) -> String {
        zip(columns, [8, 10, 12, 9, 9, 9, 13, 12]).map { text, width in
            text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
        }.joined().trimmingCharacters(in: .whitespaces)
    }
}

extension ZeroMQPubSub.Measurement {
    /// Each figure's median over the rounds, separately.
    init(median rounds: [Self]) {
        self.init(rate: ZeroMQPubSub.median(rounds.map(\.rate)),
                  publisherNanoseconds: ZeroMQPubSub.median(rounds.map(\.publisherNanoseconds)),
                  subscriberNanoseconds: ZeroMQPubSub.median(rounds.map(\.subscriberNanoseconds)))
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
