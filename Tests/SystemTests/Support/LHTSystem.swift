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
            try waitUntil(timeout: 8, "\(service.rawValue) letting \(userId)'s new key in") {
                (try? client.call(Ops.health, NoFields(), timeoutMilliseconds: 300)) != nil
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
    func eventually(_ arguments: [String], as identity: [String]? = nil, timeout: TimeInterval = 30,
                    _ condition: (String) -> Bool) throws -> ProcessRun {
        var last: ProcessRun?
        return try waitFor(timeout: timeout, interval: 0.1, "\(arguments) giving what was waited for (it gave: \(last?.stdout ?? "") \(last?.stderr ?? ""))") {
            let run = try lht(arguments, as: identity)
            last = run
            return run.status == 0 && condition(run.stdout) ? run : nil
        }
    }

    /// `lht subscribe` in the background, returned once it is listening.
    func startSubscribe(_ arguments: [String], as identity: [String]? = nil) throws -> CapturedProcess {
        var flags: [String] = identity ?? adminFlags
        if let notifier = services[.notifier] { flags += ["--notifier-events", notifier.events] }
        if let streak = services[.streak] { flags += ["--streak-events", streak.events] }
        flags += ["--planner-events", services[.planner]!.events, "--session-logger-events", logger.events]
        let process = try userProcess(BuildProducts.executable("lht"), ["subscribe"] + arguments + flags)
        try process.waitForError("listening on ")
        return process
    }

    /// Moves the planner's manual clock through its api, as a test harness (not a user) does.
    func setClock(_ instant: String) throws {
        _ = try plannerClient.ok("clock.set", ["now": instant])
    }
}

// MARK: Processes

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
    try userProcess(executable, arguments).finish(timeout: timeout)
}

/// A child process as a user's shell starts it (without the test's LHT_* variables or NO_COLOR;
/// `environment` adds to that), its outputs collected as they come.
func userProcess(_ executable: URL, _ arguments: [String], dropping dropped: Set<String> = ["NO_COLOR"],
                 environment extra: [String: String] = [:]) throws -> CapturedProcess {
    let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LHT_") && !dropped.contains($0.key) }
    return try CapturedProcess(executable.path, arguments, environment: environment.merging(extra) { $1 })
}

/// The first capture group of `pattern` in `text`.
func firstMatch(_ pattern: String, in text: String) -> String? {
    guard let regex = try? NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines]),
          let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), match.numberOfRanges > 1,
          let range = Range(match.range(at: 1), in: text) else { return nil }
    return String(text[range])
}

extension Instant {
    /// The next whole minute at least 20 s away, waiting out this minute's last 20 s if need be: for
    /// an occurrence a test sets up now and sees fall due within about a minute, on the system clock.
    static func nextMinuteAtLeast20SecondsAway() -> Instant {
        var now = Instant.now()
        if now.millisecondsSince1970 % 60_000 > 40_000 {
            Thread.sleep(forTimeInterval: Double(61_000 - now.millisecondsSince1970 % 60_000) / 1000)  // the clock itself must move on
            now = Instant.now()
        }
        return Instant(millisecondsSince1970: now.millisecondsSince1970 - now.millisecondsSince1970 % 60_000 + 60_000)
    }

    /// This instant's UTC wall time as a reminder's `time` (`HH:MM`).
    var utcReminderTime: String {
        let minute = local(in: ZoneID.utc).minuteOfDay
        return String(format: "%02d:%02d", minute / 60, minute % 60)
    }
}
