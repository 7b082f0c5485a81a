import Foundation
import Synchronization
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
enum ZeroMQPubSub {
    static let topicSize = 20
    static let payloadSize = 80
    static let probeTopic = "probe"
    /// The target: our layer reaches at least this fraction of the C figure.
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

        print(row("round", "c msg/s", "swift msg/s", "swift/c"))
        var cRates: [Double] = [], swiftRates: [Double] = []
        for round in 1...options.rounds {
            let c = try runC(program, messages: options.messages)
            let swift = try runSwift(messages: options.messages)
            cRates.append(c)
            swiftRates.append(swift)
            print(row("\(round)", rate(c), rate(swift), String(format: "%.2f", swift / c)))
        }
        let cMedian = median(cRates), swiftMedian = median(swiftRates)
        let ratio = swiftMedian / cMedian
        print(row("median", rate(cMedian), rate(swiftMedian), String(format: "%.2f", ratio)))
        print(String(format: "ratio swift/c = %.2f", ratio))
        print(String(format: "target swift/c >= %.2f: ", target) + (ratio >= target ? "met" : "NOT met"))
    }

    // MARK: Options

    struct Options {
        var messages = 2_000_000
        var rounds = 5

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                guard flag == "--messages" || flag == "--rounds" else {
                    throw BenchError("unknown argument \(flag); usage: bench zmq-pubsub [--messages N] [--rounds R]")
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

    /// Runs the C program once and returns its messages per second.
    static func runC(_ program: URL, messages: Int) throws -> Double {
        let (status, output, errors) = try execute(program.path, ["\(messages)"])
        guard status == 0 else { throw BenchError("C baseline failed (\(status)): \(errors)") }
        // One line: received=N seconds=S rate=R
        let fields = Dictionary(
            output.split(whereSeparator: \.isWhitespace).compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }, uniquingKeysWith: { $1 })
        guard fields["received"] == "\(messages)", let rate = fields["rate"].flatMap(Double.init) else {
            throw BenchError("unexpected output from the C baseline: \(output)")
        }
        return rate
    }

    static func execute(_ path: String, _ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Both outputs are a few lines, well under a pipe's buffer, so reading one then the other is safe.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self),
                String(decoding: err, as: UTF8.self))
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

        init(messages: Int) { self.messages = messages }

        func fail(_ reason: String) {
            failure.withLock { if $0 == nil { $0 = reason } }
            failed.store(true, ordering: .sequentiallyConsistent)
        }

        var hasFailed: Bool { failed.load(ordering: .sequentiallyConsistent) }
    }

    /// Runs the Swift side once and returns its messages per second.
    static func runSwift(messages: Int) throws -> Double {
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
        return Double(messages) / (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18)
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
        run.start.withLock { $0 = .now }
        for _ in 0..<run.messages {
            if run.hasFailed { break }
            try publisher.send(multipart: message)
        }
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
        while received < run.messages && !run.hasFailed {
            guard let frames = try subscriber.receiveMultipart() else {
                throw BenchError("nothing for \(receiveTimeoutMilliseconds) ms after \(received) messages")
            }
            guard frames.count == 2 else { throw BenchError("a \(frames.count)-frame message") }
            // A probe is told apart by its topic's size.
            if frames[0].count == probeTopic.utf8.count {
                run.joined.store(true, ordering: .sequentiallyConsistent)
                continue
            }
            guard frames[0].count == topicSize, frames[1].count == payloadSize else {
                throw BenchError("a malformed message: \(frames.map(\.count)) bytes")
            }
            received += 1
        }
        run.end.withLock { $0 = .now }
    }

    // MARK: Printing

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func rate(_ value: Double) -> String { String(Int(value.rounded())) }

    static func row(_ columns: String...) -> String {
        zip(columns, [8, 12, 12, 8]).map { text, width in
            text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
        }.joined()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
