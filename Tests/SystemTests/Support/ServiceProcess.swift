import Foundation
import LHTSchema
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
    /// Killed and reaped, if still running, when it is replaced or this object goes away.
    private(set) var process: ChildProcess!
    private(set) var endpoints: [String: String] = [:]
    /// Standard output, a file per start: the ready line is all a service prints there.
    private var outputFile: URL!
    /// Added to the environment (after LHT_LOG_LEVEL=warning, so it can override it).
    let environment: [String: String]
    /// Where standard error goes (appended); nil: nowhere.
    let errorLog: URL?
    /// What the executable runs under (`ip netns exec NS`); empty: itself.
    let launcher: [String]

    var api: String { endpoints["api"]! }
    var events: String { endpoints["events"]! }

    /// Starts `name` with `arguments` (api/events default to wildcard ports) and waits for `ready`.
    init(_ name: String, dataDirectory: URL = temporaryDirectory(), arguments: [String] = [], timeout: TimeInterval = 30,
         environment: [String: String] = [:], errorLog: URL? = nil, launcher: [String] = []) throws {
        self.name = name
        self.launcher = launcher
        self.dataDirectory = dataDirectory
        self.environment = environment
        self.errorLog = errorLog
        var all = ["--data-dir", dataDirectory.path]
        if !arguments.contains("--database"), let database = try SystemTestBackend.database(for: dataDirectory) {
            all += ["--database", database]
        }
        for flag in ["--api", "--events"] + (name == "session-logger" ? ["--intake"] : []) where !arguments.contains(flag) {
            all += [flag, "tcp://127.0.0.1:*"]
        }
        self.arguments = all + arguments
        try start(timeout: timeout)
    }

    /// Starts again on the same data directory, e.g. after `kill()`; `changing` replaces flags' values.
    func restart(changing changes: [String: String] = [:], timeout: TimeInterval = 30) throws {
        for (flag, value) in changes {
            if let index = arguments.firstIndex(of: flag), index + 1 < arguments.count { arguments[index + 1] = value } else { arguments += [flag, value] }
        }
        endpoints = [:]
        try start(timeout: timeout)
    }

    private func start(timeout: TimeInterval) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["LHT_LOG_LEVEL"] = "warning"
        environment.merge(self.environment) { _, given in given }
        outputFile = temporaryDirectory("lht-\(name)-out").appendingPathComponent("stdout")
        let command = launcher + [BuildProducts.executable(name).path] + arguments
        process = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment,
                                   stdout: .file(outputFile.path), stderr: errorLog.map { .file($0.path) } ?? .null)
        var exited: ChildProcess.Termination?
        do {
            try waitUntil(timeout: timeout, interval: 0.02, "\(name)'s ready line") {
                exited = process.poll()
                return !readyLine.isEmpty || exited != nil
            }
        } catch {
            process.kill()
            throw HarnessError("\(name) printed no ready line within \(timeout) s")
        }
        let line = readyLine
        if line.isEmpty, let exited { throw HarnessError("\(name) exited with \(exited.status) before ready") }
        for part in line.split(separator: " ").dropFirst(2) {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { endpoints[String(pair[0])] = String(pair[1]) }
        }
    }

    /// SIGTERM, then waits for the exit status.
    @discardableResult
    func stop() -> Int32 {
        process.terminate()
        return process.wait().status
    }

    /// The `ready` line as printed ("" until then).
    var readyLine: String {
        let output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        return output.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }).map(String.init) ?? ""
    }

    /// SIGTERM, then the exit status and how long the exit took (nil status: still running after `timeout`).
    func terminate(timeout: TimeInterval) -> (status: Int32?, seconds: TimeInterval) {
        let started = Date()
        process.terminate()
        let exited = process.poll(forUpTo: timeout)
        return (exited?.status, Date().timeIntervalSince(started))
    }

    /// SIGKILL: no chance to flush or finish anything.
    func kill() { process.kill() }
}
