import Foundation
import LHTSchema
import Testing
import ZeroMQ

// MARK: The system under test

/// The services an end-to-end test starts besides the session logger.
enum ServiceKind: CaseIterable {
    case planner, notifier, streak

    /// The `lht` flag for this service's api.
    var lhtFlag: String {
        switch self {
        case .planner: "planner"
        case .notifier: "notifier"
        case .streak: "streak"
        }
    }
}

/// A session logger plus the services asked for, on wildcard ports, the planner on a manual clock at
/// `EndToEndTests.monday`; `lht` runs with endpoint flags pointing at them.
final class LHTSystem {
    let context: Context
    let logger: ServiceProcess
    let services: [ServiceKind: ServiceProcess]
    let loggerClient: WireClient
    let plannerClient: WireClient

    init(services kinds: [ServiceKind]) throws {
        context = try Context()
        logger = try ServiceProcess("session-logger")
        var started: [ServiceKind: ServiceProcess] = [:]
        let upstream = ["--session-logger-api", logger.api]
        let planner = try ServiceProcess("reminder-planner", arguments: upstream + [
            "--session-logger-events", logger.events, "--clock", "manual:\(EndToEndTests.monday)"])
        started[.planner] = planner
        if kinds.contains(.notifier) {
            started[.notifier] = try ServiceProcess("notifier", arguments: upstream + [
                "--planner-api", planner.api, "--planner-events", planner.events])
        }
        if kinds.contains(.streak) {
            started[.streak] = try ServiceProcess("noalc-streak", arguments: upstream + ["--session-logger-events", logger.events])
        }
        services = started
        loggerClient = try WireClient(logger.api, context: context)
        plannerClient = try WireClient(planner.api, context: context)
    }

    /// Every api flag; services not started point at a port where nothing listens.
    var endpointFlags: [String] {
        ["--session-logger", logger.api] + ServiceKind.allCases.flatMap { ["--\($0.lhtFlag)", services[$0]?.api ?? "tcp://127.0.0.1:1"] }
    }

    /// `lht <arguments>` with the endpoint flags; `subscribe` gets event endpoints instead.
    func lht(_ arguments: [String]) throws -> ProcessRun {
        try runLHT(arguments + endpointFlags)
    }

    func expectOK(_ arguments: [String], output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try lht(arguments)
        #expect(run.status == 0, "\(arguments): \(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stdout == output + "\n", sourceLocation: sourceLocation)
    }

    func expectOK(_ arguments: [String], matching pattern: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let run = try lht(arguments)
        #expect(run.status == 0, "\(arguments): \(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stdout.range(of: pattern, options: .regularExpression) != nil, "\(run.stdout) !~ \(pattern)", sourceLocation: sourceLocation)
    }

    /// Adds a reminder and returns its id, read from lht's own line.
    func addReminder(_ arguments: [String], user: String) throws -> String {
        let run = try lht(["reminder", "add"] + arguments + ["--user", user])
        guard run.status == 0, let id = firstMatch(#"^added reminder ([0-9a-f-]{36}): "#, in: run.stdout) else {
            throw HarnessError("reminder add \(arguments) failed: \(run.stdout) \(run.stderr)")
        }
        return id
    }

    /// Runs `arguments` until `condition` holds for its output (delivery between services is asynchronous).
    func eventually(_ arguments: [String], timeout: TimeInterval = 10, sourceLocation: SourceLocation = #_sourceLocation,
                    _ condition: (String) -> Bool) throws -> ProcessRun {
        let deadline = Date().addingTimeInterval(timeout)
        var run = try lht(arguments)
        while !(run.status == 0 && condition(run.stdout)) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            run = try lht(arguments)
        }
        #expect(run.status == 0 && condition(run.stdout), "\(arguments) gave: \(run.stdout) \(run.stderr)", sourceLocation: sourceLocation)
        return run
    }

    /// `lht subscribe` in the background, returned once it is listening.
    func startSubscribe(_ arguments: [String]) throws -> BackgroundProcess {
        var flags: [String] = []
        if let notifier = services[.notifier] { flags += ["--notifier-events", notifier.events] }
        if let streak = services[.streak] { flags += ["--streak-events", streak.events] }
        flags += ["--planner-events", services[.planner]!.events, "--session-logger-events", logger.events]
        let process = try BackgroundProcess(BuildProducts.executable("lht"), ["subscribe"] + arguments + flags)
        try process.waitForError("listening on ")
        return process
    }

    /// Moves the planner's manual clock through its api, as a test harness (not a user) does.
    func setClock(_ instant: String) throws {
        _ = try plannerClient.ok("clock.set", ["now": instant])
    }
}

// MARK: Processes

struct ProcessRun {
    let status: Int32
    let stdout: String
    let stderr: String
    let seconds: TimeInterval
}

let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// `lht` as a user runs it, with no LHT_* variables from the test's own environment.
func runLHT(_ arguments: [String]) throws -> ProcessRun {
    try runProcess(BuildProducts.executable("lht"), arguments)
}

/// Runs a program to its end (at most `timeout`), collecting both outputs.
func runProcess(_ executable: URL, _ arguments: [String], timeout: TimeInterval = 30) throws -> ProcessRun {
    let process = try BackgroundProcess(executable, arguments)
    return try process.finish(timeout: timeout)
}

/// A child process whose outputs are collected as they come.
final class BackgroundProcess {
    private let process = Process()
    private let stdout = OutputBuffer()
    private let stderr = OutputBuffer()
    private let started = Date()

    init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LHT_") && $0.key != "NO_COLOR" }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        for (pipe, buffer) in [(out, stdout), (err, stderr)] {
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                if data.isEmpty { handle.readabilityHandler = nil } else { buffer.append(String(decoding: data, as: UTF8.self)) }
            }
        }
        try process.run()
    }

    func waitForOutput(_ text: String, timeout: TimeInterval = 10) throws { try wait(for: text, in: stdout, timeout: timeout) }
    func waitForError(_ text: String, timeout: TimeInterval = 10) throws { try wait(for: text, in: stderr, timeout: timeout) }

    private func wait(for text: String, in buffer: OutputBuffer, timeout: TimeInterval) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !buffer.text.contains(text) {
            guard process.isRunning, Date() < deadline else {
                throw HarnessError("\(process.executableURL!.lastPathComponent) did not print \"\(text)\": \(stdout.text) \(stderr.text)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Waits for the exit (killing the process after `timeout`) and the last of its output.
    func finish(timeout: TimeInterval = 30) throws -> ProcessRun {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw HarnessError("\(process.executableURL!.lastPathComponent) \(process.arguments ?? []) did not exit within \(timeout) s")
        }
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        // The pipes' last bytes arrive on the reader threads just after the exit.
        Thread.sleep(forTimeInterval: 0.05)
        return ProcessRun(status: process.terminationStatus, stdout: stdout.text, stderr: stderr.text, seconds: seconds)
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// The first capture group of `pattern` in `text`.
func firstMatch(_ pattern: String, in text: String) -> String? {
    guard let regex = try? NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines]),
          let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), match.numberOfRanges > 1,
          let range = Range(match.range(at: 1), in: text) else { return nil }
    return String(text[range])
}
