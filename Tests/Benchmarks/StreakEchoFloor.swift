import Foundation
import GRDB
import LHTClient
import LHTSchema
import NoAlcStreak
import StreakRules
import ServiceHost
import Storage
import Synchronization
import TestSupport
import ZeroMQ
/// The floors `streak.get` is compared with: a ROUTER echoing a reply of the same size, on a thread
/// of this process or in a process of its own.
extension StreakBenchmark {
    /// `--serve-echo BYTES`: an `Echo` in this process, announced as a service announces itself
    /// (`ready echo api=…`), until the process is ended.
    static func serveEcho(replySize: Int) throws -> Never {
        let echo = try Echo(context: Context(), replySize: replySize)
        print("ready echo api=\(echo.endpoint)")
        fflush(nil)
        while true { pause() }
    }

    /// A ROUTER on its own thread answering every request with a fixed frame: the transport's cost alone.
    final class Echo: Sendable {
        let endpoint: String
        private let control: Control

        /// What the caller and the echo thread share; the socket itself stays on its thread.
        final class Control: Sendable {
            let bound = Mutex<Result<String, BenchError>?>(nil)
            let ready = DispatchSemaphore(value: 0)
            let stopped = Atomic<Bool>(false)
            let finished = DispatchSemaphore(value: 0)
        }

        init(context: Context, replySize: Int) throws {
            let control = Control()
            Thread {
                defer { control.finished.signal() }
                let reply = Data(repeating: UInt8(ascii: "x"), count: replySize)
                do {
                    let router = try Socket(context, .router)
                    try router.setReceiveTimeout(milliseconds: 50)
                    let endpoint = try router.bind("tcp://127.0.0.1:*")
                    control.bound.withLock { $0 = .success(endpoint) }
                    control.ready.signal()
                    while !control.stopped.load(ordering: .relaxed) {
                        guard let frames = try router.receiveMultipart() else { continue }
                        try router.send(multipart: frames.dropLast() + [reply])
                    }
                } catch {
                    control.bound.withLock { if $0 == nil { $0 = .failure(BenchError("echo: \(error)")) } }
                    control.ready.signal()
                }
            }.start()
            control.ready.wait()
            endpoint = try control.bound.withLock { $0! }.get()
            self.control = control
        }

        func stop() {
            control.stopped.store(true, ordering: .relaxed)
            control.finished.wait()
        }
    }

    /// A built executable started like the system tests start it: wildcard ports, endpoints read from `ready`.
    final class Child {
        let process: ChildProcess
        private(set) var endpoints: [String: String] = [:]
        private let name: String
        private let output: URL

        /// Where `swift build` put the executables: beside this one.
        static let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()

        /// Starts `name` and waits for its ready line.
        init(_ name: String, _ arguments: [String], readyTimeout: TimeInterval = 60) throws {
            let path = Self.directory.appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw BenchError("no \(name) beside bench in \(Self.directory.path): build them all (swift build -c release)")
            }
            var environment = ProcessInfo.processInfo.environment
            environment["LHT_LOG_LEVEL"] = environment["LHT_LOG_LEVEL"] ?? "error"
            self.name = name
            output = temporaryDirectory("bench-\(name)-out").appendingPathComponent("stdout")
            process = try ChildProcess(path, arguments, environment: environment, stdout: .file(output.path))
            try waitUntilReady(timeout: readyTimeout)
        }

        func waitUntilReady(timeout: TimeInterval) throws {
            // The ready line is all a service prints on standard output.
            var text = ""
            let deadline = Date().addingTimeInterval(timeout)
            while !text.contains("\n") {
                guard process.isRunning, Date() < deadline else { throw BenchError("\(name) printed no ready line") }
                Thread.sleep(forTimeInterval: 0.01)
                text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            }
            for part in text.split(separator: "\n")[0].split(separator: " ").dropFirst(2) {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { endpoints[String(pair[0])] = String(pair[1]) }
            }
        }

        /// SIGTERM and the exit.
        func stop() {
            process.terminate()
            process.wait()
        }
    }

}
