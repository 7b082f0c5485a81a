import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ
// temporaryDirectory and HarnessError, for every file of this target.
@_exported import TestSupport

/// Where `swift build` put the executables: beside the test bundle.
enum BuildProducts {
    static let directory: URL = {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent()
    }()

    static func executable(_ name: String) -> URL { directory.appendingPathComponent(name) }
}

/// One service started from the built executable, on wildcard loopback ports, with its endpoints
/// read from its `ready` line.
final class ServiceProcess: @unchecked Sendable {
    let name: String
    let dataDirectory: URL
    private(set) var arguments: [String]
    private(set) var process: Process
    private(set) var endpoints: [String: String] = [:]
    private let output = OutputBuffer()
    /// Added to the environment (after LHT_LOG_LEVEL=warning, so it can override it).
    let environment: [String: String]
    /// Where standard error goes (appended); nil: nowhere.
    let errorLog: URL?

    var api: String { endpoints["api"]! }
    var events: String { endpoints["events"]! }

    /// Starts `name` with `arguments` (api/events default to wildcard ports) and waits for `ready`.
    init(_ name: String, dataDirectory: URL = temporaryDirectory(), arguments: [String] = [], timeout: TimeInterval = 30,
         environment: [String: String] = [:], errorLog: URL? = nil) throws {
        self.name = name
        self.dataDirectory = dataDirectory
        self.environment = environment
        self.errorLog = errorLog
        var all = ["--data-dir", dataDirectory.path]
        for flag in ["--api", "--events"] + (name == "session-logger" ? ["--intake"] : []) where !arguments.contains(flag) {
            all += [flag, "tcp://127.0.0.1:*"]
        }
        self.arguments = all + arguments
        process = Process()
        try start(timeout: timeout)
    }

    /// Starts again on the same data directory, e.g. after `kill()`; `changing` replaces flags' values.
    func restart(changing changes: [String: String] = [:], timeout: TimeInterval = 30) throws {
        for (flag, value) in changes {
            if let index = arguments.firstIndex(of: flag), index + 1 < arguments.count { arguments[index + 1] = value } else { arguments += [flag, value] }
        }
        process = Process()
        endpoints = [:]
        output.clear()
        try start(timeout: timeout)
    }

    private func start(timeout: TimeInterval) throws {
        process.executableURL = BuildProducts.executable(name)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LHT_LOG_LEVEL"] = "warning"
        environment.merge(self.environment) { _, given in given }
        process.environment = environment
        let stdout = Pipe()
        process.standardOutput = stdout
        if let errorLog {
            if !FileManager.default.fileExists(atPath: errorLog.path) { _ = FileManager.default.createFile(atPath: errorLog.path, contents: nil) }
            let handle = try FileHandle(forWritingTo: errorLog)
            handle.seekToEndOfFile()
            process.standardError = handle
        } else {
            process.standardError = FileHandle.nullDevice
        }
        stdout.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            if !data.isEmpty { output.append(String(decoding: data, as: UTF8.self)) }
        }
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = output.text.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }) {
                for part in line.split(separator: " ").dropFirst(2) {
                    let pair = part.split(separator: "=", maxSplits: 1)
                    if pair.count == 2 { endpoints[String(pair[0])] = String(pair[1]) }
                }
                return
            }
            if !process.isRunning { throw HarnessError("\(name) exited with \(process.terminationStatus) before ready") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        process.terminate()
        throw HarnessError("\(name) printed no ready line within \(timeout) s")
    }

    /// SIGTERM, then waits for the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The `ready` line as printed.
    var readyLine: String { output.text.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }).map(String.init) ?? "" }

    /// SIGTERM, then the exit status and how long the exit took (nil status: still running after `timeout`).
    func terminate(timeout: TimeInterval) -> (status: Int32?, seconds: TimeInterval) {
        let started = Date()
        process.terminate()
        while process.isRunning, Date().timeIntervalSince(started) < timeout { Thread.sleep(forTimeInterval: 0.005) }
        return (process.isRunning ? nil : process.terminationStatus, Date().timeIntervalSince(started))
    }

    /// SIGKILL: no chance to flush or finish anything.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { kill() }
}

/// Standard output collected from the pipe's reader thread.
final class OutputBuffer: Sendable {
    private let storage = Mutex<String>("")
    var text: String { storage.withLock { $0 } }
    func append(_ text: String) { storage.withLock { $0 += text } }
    func clear() { storage.withLock { $0 = "" } }
}
