import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

// MARK: The system under test

/// The services an end-to-end test starts besides the session logger.
enum ServiceKind: CaseIterable {
    case planner, notifier, streak

    var service: ServiceName {
        switch self {
        case .planner: .reminderPlanner
        case .notifier: .notifier
        case .streak: .noalcStreak
        }
    }

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
/// `EndToEndTests.monday`; `lht` runs with endpoint flags pointing at them. With `keys`, the key
/// directory is made by `lht keys init`, every service runs with `--keys`, `lht` acts as the admin
/// (`--keys DIR`) unless a call says otherwise, and the test's own clients are CURVE clients as admin.
final class LHTSystem {
    let context: Context
    let logger: ServiceProcess
    let services: [ServiceKind: ServiceProcess]
    let loggerClient: WireClient
    let plannerClient: WireClient
    /// The key directory the services run with; nil: plaintext.
    let keys: URL?

    init(services kinds: [ServiceKind], keys withKeys: Bool = false) throws {
        context = try Context()
        keys = withKeys ? try makeKeyDirectory() : nil
        let keyArguments = keys.map { ["--keys", $0.path] } ?? []
        logger = try ServiceProcess("session-logger", arguments: keyArguments)
        var started: [ServiceKind: ServiceProcess] = [:]
        let upstream = ["--session-logger-api", logger.api] + keyArguments
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
        let directory = keys.map { KeyDirectory($0.path) }
        loggerClient = try WireClient(logger.api, context: context, credentials: directory.map { try adminCredentials($0, .sessionLogger) })
        plannerClient = try WireClient(planner.api, context: context, credentials: directory.map { try adminCredentials($0, .reminderPlanner) })
    }

    /// lht's key flags when a call gives none: the admin's with keys, nothing without.
    var adminFlags: [String] { keys.map { ["--keys", $0.path] } ?? [] }

    /// A user's certificate pair made by `lht keys add-user` into a directory of its own; the flags
    /// that make lht act as that user (`--cert`, and the services' public keys from the key directory).
    func addUser(_ userId: String) throws -> (secret: URL, flags: [String]) {
        guard let keys else { throw HarnessError("a system without keys has no users to add") }
        let out = temporaryDirectory("lht-cert-\(userId)")
        let run = try runLHT(["keys", "add-user", userId, "--out", out.path, "--keys", keys.path])
        guard run.status == 0 else { throw HarnessError("lht keys add-user \(userId): \(run.stderr)") }
        let secret = out.appendingPathComponent("\(userId).key_secret")
        // Each service re-reads clients/ on its own (within 5 s): wait until every one lets the key in.
        let certificate = try Certificate.loadSecret(secret.path)
        let directory = KeyDirectory(keys.path)
        for (service, process) in [(ServiceName.sessionLogger, logger)] + services.map({ ($0.key.service, $0.value) }) {
            let client = ServiceClient(context: context, endpoint: process.api, credentials: CurveCredentials(
                publicKey: certificate.publicKey, secretKey: certificate.secretKey!, serverKey: try directory.servicePublicKey(service.rawValue)))
            let deadline = Date().addingTimeInterval(8)
            while (try? client.call(Ops.health, NoFields(), timeoutMilliseconds: 300)) == nil {
                guard Date() < deadline else { throw HarnessError("\(service.rawValue) did not let \(userId)'s new key in within 8 s") }
            }
        }
        return (secret, ["--cert", secret.path, "--server-keys", keys.path])
    }

    /// Every api flag; services not started point at a port where nothing listens.
    var endpointFlags: [String] {
        ["--session-logger", logger.api] + ServiceKind.allCases.flatMap { ["--\($0.lhtFlag)", services[$0]?.api ?? "tcp://127.0.0.1:1"] }
    }

    /// `lht <arguments>` with the endpoint flags and `identity`'s key flags (default: the admin's, with keys).
    func lht(_ arguments: [String], as identity: [String]? = nil) throws -> ProcessRun {
        try runLHT(arguments + endpointFlags + (identity ?? adminFlags))
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
    func eventually(_ arguments: [String], as identity: [String]? = nil, timeout: TimeInterval = 10,
                    sourceLocation: SourceLocation = #_sourceLocation, _ condition: (String) -> Bool) throws -> ProcessRun {
        let deadline = Date().addingTimeInterval(timeout)
        var run = try lht(arguments, as: identity)
        while !(run.status == 0 && condition(run.stdout)) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            run = try lht(arguments, as: identity)
        }
        #expect(run.status == 0 && condition(run.stdout), "\(arguments) gave: \(run.stdout) \(run.stderr)", sourceLocation: sourceLocation)
        return run
    }

    /// `lht subscribe` in the background, returned once it is listening.
    func startSubscribe(_ arguments: [String], as identity: [String]? = nil) throws -> BackgroundProcess {
        var flags: [String] = identity ?? adminFlags
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

/// A key directory made by the real `lht keys init`, in a fresh temporary directory.
func makeKeyDirectory() throws -> URL {
    let keys = temporaryDirectory("lht-keys").appendingPathComponent("keys")
    let run = try runLHT(["keys", "init", keys.path])
    guard run.status == 0 else { throw HarnessError("lht keys init: \(run.stderr)") }
    return keys
}

/// The admin certificate of `keys` as a CURVE client of `service`.
func adminCredentials(_ keys: KeyDirectory, _ service: ServiceName) throws -> CurveCredentials {
    let admin = try keys.adminCertificate()
    return CurveCredentials(publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: try keys.servicePublicKey(service.rawValue))
}

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

    var output: String { stdout.text }
    var errors: String { stderr.text }

    /// SIGTERM and the exit.
    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
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
