import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LHTClient
import LHTSchema
import Spawn
import Synchronization

/// Where `lht subscribe` hands each event on (ntfy's subscriber: a command, the desktop, an ntfy topic),
/// and the cursor that makes a restarted subscriber deliver what it missed, once.
struct DeliveryOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Run this command (via /bin/sh -c) per notification, its fields in LHT_TITLE, LHT_BODY, "
        + "LHT_ACTIVITY, LHT_NOTIFICATION_ID, LHT_USER_ID, LHT_CATEGORY, LHT_DEEP_LINK, LHT_TARGET_DAY, LHT_SCHEDULED_FOR, "
        + "LHT_ACTIONS (action ids) and LHT_EVENT (the event JSON); exit status 0 is delivered.", valueName: "command"))
    var exec: String?

    @Flag(help: "Show each notification on the desktop with notify-send (needs DISPLAY, WAYLAND_DISPLAY or DBUS_SESSION_BUS_ADDRESS).")
    var desktop = false

    @Option(help: ArgumentHelp("Publish each notification to this ntfy topic, e.g. https://ntfy.sh/my-lht (JSON publish; "
        + "env LHT_NTFY_TOKEN: an access token).", valueName: "url"))
    var ntfy: String?

    @Option(name: .customLong("ntfy-priority"), help: ArgumentHelp("ntfy priority: 1-5 or min, low, default, high, max.", valueName: "priority"))
    var ntfyPriority = "default"

    @Option(help: ArgumentHelp("The file that keeps the last delivered seq per publisher (default with --exec, --desktop or --ntfy: "
        + "~/.local/state/lht/subscribe-<user>-<target>.cursor, or under $XDG_STATE_HOME; mode 0600). On start, what was missed "
        + "after it is delivered first.",
        valueName: "file"))
    var cursor: String?

    init() {}

    func validate() throws {
        let targets = [exec != nil, desktop, ntfy != nil].filter { $0 }.count
        guard targets <= 1 else {
            throw ValidationError("give one of --exec, --desktop and --ntfy (each keeps its own cursor: run one subscriber per target)")
        }
        if exec?.isEmpty == true { throw ValidationError("--exec: the command is empty") }
        if desktop {
            guard ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"].contains(where: { !(environment[$0] ?? "").isEmpty }) else {
                throw ValidationError("--desktop needs a desktop session (DISPLAY, WAYLAND_DISPLAY or DBUS_SESSION_BUS_ADDRESS); "
                    + "use --exec or --ntfy elsewhere")
            }
            guard findExecutable("notify-send") != nil else {
                throw ValidationError("--desktop needs notify-send on PATH (Debian: apt-get install libnotify-bin)")
            }
        }
        if let ntfy { _ = try NtfyTopic(ntfy) }
        if NtfyTopic.priority(ntfyPriority) == nil {
            throw ValidationError("--ntfy-priority: \"\(ntfyPriority)\" is not 1-5, min, low, default, high or max")
        }
        if cursor?.isEmpty == true { throw ValidationError("--cursor: the path is empty") }
    }

    /// The target asked for; nil: print lines on standard output (as without these flags).
    func target() throws -> DeliveryTarget? {
        if let exec { return CommandTarget(command: exec) }
        if desktop { return DesktopTarget(notifySend: findExecutable("notify-send")!) }
        if let ntfy { return NtfyTarget(topic: try NtfyTopic(ntfy), priority: NtfyTopic.priority(ntfyPriority)!) }
        return nil
    }

    /// What names the target in the default cursor's file name.
    private var targetKey: String? {
        if let exec { return "exec-" + fnv1a(exec) }
        if desktop { return "desktop" }
        if let ntfy { return "ntfy-" + fnv1a(ntfy) }
        return nil
    }

    /// `--cursor`, else the default for a delivery target (`who` names the user or the prefixes); nil: no cursor.
    func cursorURL(who: String) -> URL? {
        if let cursor { return URL(fileURLWithPath: cursor) }
        guard let targetKey else { return nil }
        let state = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state")
        let safe = String(who.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" }.prefix(80))
        return state.appendingPathComponent("lht").appendingPathComponent("subscribe-\(safe)-\(targetKey).cursor")
    }
}

/// 64-bit FNV-1a as 16 hex digits: a short stable name for a command or a URL in a file name.
func fnv1a(_ text: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}

/// The first `name` in PATH that is an executable file.
func findExecutable(_ name: String) -> String? {
    for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

// MARK: Targets

/// Why a hand-over failed: worth retrying (the target is down, busy or failed this once) or not (it refused).
struct DeliveryError: Error, CustomStringConvertible {
    let description: String
    let retry: Bool
}

protocol DeliveryTarget {
    /// How lines name it: "ntfy https://ntfy.sh/my-lht".
    var name: String { get }
    /// Whether it takes this event; others are passed over (and the cursor moves past them).
    func accepts(_ event: ReceivedEvent) -> Bool
    /// Hands one event over; returns only once the target has it.
    func deliver(_ event: ReceivedEvent) throws(DeliveryError)
}

extension DeliveryTarget {
    func accepts(_ event: ReceivedEvent) -> Bool {
        if case .notify = event.data { return true }
        return false
    }
}

/// The event envelope as one line of JSON (what `lht subscribe` prints under "event").
func envelopeJSON(_ event: ReceivedEvent) -> String {
    (try? WireJSON.encode(event)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
}

/// `--exec`: `/bin/sh -c <command>` per event, the notification's fields in LHT_* variables.
struct CommandTarget: DeliveryTarget {
    let command: String
    var name: String { "command" }

    /// Every matching event: a command can read any of them from LHT_EVENT (LHT_TYPE, LHT_TOPIC and LHT_SEQ too).
    func accepts(_ event: ReceivedEvent) -> Bool { true }

    static func variables(_ event: ReceivedEvent) -> [String: String] {
        var variables = ["LHT_EVENT": envelopeJSON(event), "LHT_TYPE": event.type, "LHT_TOPIC": event.topic, "LHT_SEQ": String(event.seq)]
        if case .notify(let notification) = event.data {
            variables["LHT_TITLE"] = notification.title
            variables["LHT_BODY"] = notification.body
            variables["LHT_ACTIVITY"] = notification.activity.rawValue
            variables["LHT_NOTIFICATION_ID"] = notification.notificationId
            variables["LHT_USER_ID"] = notification.userId.description
            variables["LHT_CATEGORY"] = notification.category
            variables["LHT_DEEP_LINK"] = notification.deepLink
            variables["LHT_TARGET_DAY"] = notification.targetDay?.description ?? ""
            variables["LHT_SCHEDULED_FOR"] = notification.scheduledFor.description
            variables["LHT_ACTIONS"] = notification.actions.map(\.id).joined(separator: " ")
        }
        return variables
    }

    func deliver(_ event: ReceivedEvent) throws(DeliveryError) {
        try runToEnd("/bin/sh", ["-c", command], extra: Self.variables(event), what: "the command")
    }
}

/// `--desktop`: notify-send with the title and body, app name "lht".
struct DesktopTarget: DeliveryTarget {
    let notifySend: String
    var name: String { "notify-send" }

    func deliver(_ event: ReceivedEvent) throws(DeliveryError) {
        guard case .notify(let notification) = event.data else { return }
        try runToEnd(notifySend, ["--app-name=lht", "--", notification.title, notification.body], extra: [:], what: "notify-send")
    }
}

/// Runs a program with standard output and error inherited; exit status 0 is success, anything else worth a retry.
/// In a process group of its own: a ^C stops the subscriber between hand-overs, not the command in the middle of one.
private func runToEnd(_ executable: String, _ arguments: [String], extra: [String: String], what: String) throws(DeliveryError) {
    let process: ChildProcess
    do {
        process = try ChildProcess(executable, arguments, environment: ProcessInfo.processInfo.environment.merging(extra) { $1 },
                                   ownProcessGroup: true)
    } catch {
        throw DeliveryError(description: "\(what) could not be started: \(error)", retry: true)
    }
    switch process.wait() {
    case .exited(0): return
    case .exited(let code): throw DeliveryError(description: "\(what) exited with \(code)", retry: true)
    case .signalled(let signal): throw DeliveryError(description: "\(what) was killed by signal \(signal)", retry: true)
    }
}

/// An ntfy topic URL, `<server>/<topic>`: the server (with any base path) and the topic.
struct NtfyTopic {
    let server: URL
    let topic: String
    let text: String

    init(_ text: String) throws(ValidationError) {
        let invalid = ValidationError("--ntfy: \"\(text)\" is not an ntfy topic URL such as https://ntfy.sh/my-lht")
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false, url.query == nil, url.fragment == nil else { throw invalid }
        let topic = url.lastPathComponent
        guard (1...64).contains(topic.count),
              topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { throw invalid }
        self.topic = topic
        server = url.deletingLastPathComponent()
        self.text = text
    }

    /// ntfy's priorities: 1-5 or their names.
    static func priority(_ text: String) -> Int? {
        if let number = Int(text), (1...5).contains(number) { return number }
        return ["min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5][text.lowercased()]
    }
}

/// `--ntfy`: ntfy's JSON publish, a POST to the server's root with {topic, message, title, tags, priority, click, actions}.
/// JSON rather than the header form because titles carry UTF-8 (umlauts, emoji), which HTTP headers do not.
struct NtfyTarget: DeliveryTarget {
    let topic: NtfyTopic
    let priority: Int
    private let session: URLSession

    init(topic: NtfyTopic, priority: Int) {
        self.topic = topic
        self.priority = priority
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 15
        configuration.timeoutIntervalForResource = 30
        session = URLSession(configuration: configuration)
    }

    var name: String { "ntfy \(topic.text)" }

    /// An emoji tag (ntfy shows a tag that is an emoji short code as the emoji) and the activity itself.
    static func tags(_ notification: LHTSchema.Notification) -> [String] {
        let emoji = switch notification.activity {
        case .mindfulness: "lotus_position"
        case .workout: "muscle"
        case .noalc: "droplet"
        }
        return [emoji, notification.activity.rawValue] + (notification.test ? ["test"] : [])
    }

    /// ntfy `view` actions (at most three): `open.*` opens the deep link; a NoAlc level opens
    /// `lht://noalc?day=<targetDay>&level=<level>`, the app logs it (no callback endpoint is exposed).
    static func actions(_ notification: LHTSchema.Notification) -> [JSONValue] {
        notification.actions.prefix(3).map { action in
            var url = notification.deepLink
            if action.id.hasPrefix("noalc."), let day = notification.targetDay {
                url = "lht://noalc?day=\(day)&level=\(action.id.dropFirst("noalc.".count))"
            }
            return .object(["action": .string("view"), "label": .string(action.title), "url": .string(url), "clear": .bool(true)])
        }
    }

    static func message(_ notification: LHTSchema.Notification, topic: String, priority: Int) -> JSONValue {
        var message: [String: JSONValue] = [
            "topic": .string(topic), "title": .string(notification.title), "message": .string(notification.body),
            "tags": .array(tags(notification).map(JSONValue.string)), "priority": .number(Double(priority)),
            "click": .string(notification.deepLink),
        ]
        let actions = actions(notification)
        if !actions.isEmpty { message["actions"] = .array(actions) }
        return .object(message)
    }

    func deliver(_ event: ReceivedEvent) throws(DeliveryError) {
        guard case .notify(let notification) = event.data else { return }
        var request = URLRequest(url: topic.server)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("lht/\(LHT.configuration.version)", forHTTPHeaderField: "User-Agent")
        if let token = environment["LHT_NTFY_TOKEN"], !token.isEmpty {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        request.httpBody = Data(Self.message(notification, topic: topic.topic, priority: priority).jsonLine.utf8)
        let outcome = Mutex<(status: Int?, body: Data?, error: String?)?>(nil)
        let done = DispatchSemaphore(value: 0)
        session.dataTask(with: request) { data, response, error in
            outcome.withLock { $0 = ((response as? HTTPURLResponse)?.statusCode, data, error.map { "\($0.localizedDescription)" }) }
            done.signal()
        }.resume()
        done.wait()
        let result = outcome.withLock { $0 }!
        guard let status = result.status else {
            throw DeliveryError(description: "\(topic.server.absoluteString) did not answer: \(result.error ?? "no response")", retry: true)
        }
        guard (200..<300).contains(status) else {
            let body = result.body.map { String(decoding: $0.prefix(200), as: UTF8.self) } ?? ""
            // 5xx, 408 and 429 pass; any other refusal (a bad token, a bad message) will not.
            throw DeliveryError(description: "\(topic.server.absoluteString) answered HTTP \(status) \(body)",
                                retry: status >= 500 || status == 408 || status == 429)
        }
    }
}

// MARK: Cursor

/// The last delivered seq per publisher, in a file only its user can read: `{"notifier":17}`. Each
/// change is written to a temporary file and renamed over it, so the file is always a whole version.
final class DeliveryCursor {
    let url: URL
    private(set) var seqs: [String: Int64]

    init(_ url: URL) throws(Failure) {
        self.url = url
        guard let data = FileManager.default.contents(atPath: url.path) else {
            seqs = [:]
            return
        }
        do {
            seqs = try JSONDecoder().decode([String: Int64].self, from: data)
        } catch {
            throw Failure.local("the cursor \(url.path) cannot be read (\(error)); remove it to start from now")
        }
    }

    func seq(_ service: ServiceName) -> Int64? { seqs[service.rawValue] }

    /// Moves the publisher's cursor to `seq` (never back) and writes the file.
    func advance(_ service: ServiceName, to seq: Int64) throws(Failure) {
        guard seq > (seqs[service.rawValue] ?? -1) else { return }
        seqs[service.rawValue] = seq
        let text = JSONValue.object(seqs.mapValues { .number(Double($0)) }).jsonLine + "\n"
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(ProcessInfo.processInfo.processIdentifier).tmp")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, url.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw Failure.local("cannot write the cursor \(url.path): \(error)")
        }
    }
}

// MARK: Stopping

/// The signal (SIGTERM, SIGINT) that asked a delivering subscriber to stop; 0 while none did. A hand-over
/// under way finishes and its cursor is written first, so stopping never makes a notification come twice.
let stopSignal = Atomic<Int32>(0)

/// Routes SIGTERM and SIGINT to `stopSignal` instead of ending the process at once.
func stopBetweenHandOvers() {
    for number in [SIGTERM, SIGINT] {
        signal(number) { received in stopSignal.store(received, ordering: .relaxed) }
    }
}

/// Ends the command (status 128 + the signal) if a stop was asked for.
func exitIfStopped() throws {
    let number = stopSignal.load(ordering: .relaxed)
    if number != 0 { throw ExitCode(128 + number) }
}

// MARK: Retrying

/// Hands `event` over, retrying with exponential backoff (0.5 s doubling to 30 s) while the target
/// is down; gives up at `deadline` (status 3) or on a refusal not worth retrying (status 4).
func deliverWithRetries(_ event: ReceivedEvent, to target: DeliveryTarget, deadline: Date?) throws(Failure) {
    var delay = 0.5
    var attempt = 1
    while true {
        do {
            try target.deliver(event)
            if attempt > 1 { warn("delivered \(event.topic) #\(event.seq) to \(target.name) after \(attempt) attempts") }
            return
        } catch {
            guard error.retry else { throw Failure.local("\(target.name) refused \(event.topic) #\(event.seq): \(error)") }
            if let deadline, Date().addingTimeInterval(delay) > deadline {
                throw Failure(status: Status.noAnswer, line: "error: \(target.name) did not take \(event.topic) #\(event.seq) "
                    + "within --max-wait (\(attempt) attempts): \(error)")
            }
            warn("\(target.name) failed on \(event.topic) #\(event.seq) (attempt \(attempt)): \(error); retrying in \(delay.formatted()) s")
            let wake = Date().addingTimeInterval(delay)
            while Date() < wake {
                if stopSignal.load(ordering: .relaxed) != 0 { throw Failure(status: 128 + stopSignal.load(ordering: .relaxed), line: "stopped while retrying \(event.topic) #\(event.seq)") }
                Thread.sleep(forTimeInterval: min(0.1, max(0, wake.timeIntervalSinceNow)))
            }
            delay = min(delay * 2, 30)
            attempt += 1
        }
    }
}
