import ArgumentParser
import Foundation
import LHTSchema
import ZeroMQ

struct Subscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Follow events live: one JSON line per message, {\"topic\":…,\"event\":<envelope>}.",
        discussion: """
            Topics are <type>.<userId>.<activity>; a prefix selects, e.g. notify.henning. (the default: the \
            user's notifications), reminder.due., streak.updated. or "" for everything. lht connects to every \
            publisher whose topics a prefix can match, or only to --events. A line "listening …" on standard \
            error says when the subscription is in place. Messages published before it are not replayed.
            """)

    @Argument(help: "Topic prefixes (default notify.<user>.).")
    var prefixes: [String] = []

    @Option(help: ArgumentHelp("The user whose notifications to follow when no prefix is given (env LHT_USER).", valueName: "user"))
    var user: String?

    @Option(help: ArgumentHelp("Subscribe at this events endpoint (any service's PUB) instead; repeatable.", valueName: "endpoint"))
    var events: [String] = []

    @Flag(help: "Print a readable line per message instead of JSON.")
    var pretty = false

    @Option(help: "Exit after this many messages.")
    var count: Int?

    @Option(name: .customLong("max-wait"), help: ArgumentHelp(
        "Give up after this many seconds without the --count messages (status 3).", valueName: "seconds"))
    var maxWait: Double?

    @OptionGroup(title: "Event endpoints") var publishers: EventEndpoints
    /// Not used for subscribing; accepted so that scripts can pass every command the same endpoint flags.
    @OptionGroup(title: "Connection", visibility: .hidden) var connection: Connection

    func validate() throws {
        if prefixes.isEmpty, user == nil, environment["LHT_USER"] == nil {
            throw ValidationError("give a topic prefix, or --user (or LHT_USER) for the user's notifications")
        }
        if let user = user ?? environment["LHT_USER"], prefixes.isEmpty, UserID(user) == nil {
            throw ValidationError("--user: \"\(user)\" is not a userId (1-64 of A-Z a-z 0-9 _ -)")
        }
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
        if let maxWait, maxWait <= 0 { throw ValidationError("--max-wait must be more than 0 seconds") }
    }

    func run() throws {
        let topics = prefixes.isEmpty ? ["notify.\(user ?? environment["LHT_USER"]!)."] : prefixes
        let endpoints = events.isEmpty
            ? ServiceName.allCases.filter { service in topics.contains { service.publishes(matching: $0) } }.map(publishers.events)
            : events
        guard !endpoints.isEmpty else { throw ValidationError("no service publishes topics starting with \(topics.joined(separator: ", ")); use --events") }
        let context: Context
        let socket: Socket
        do {
            context = try Context()
            socket = try Socket(context, .sub)
            for topic in topics { try socket.subscribe(topic) }
            for endpoint in endpoints { try socket.connect(endpoint) }
        } catch {
            throw Failure.local("cannot subscribe: \(error)")
        }
        // The subscription travels to the publisher asynchronously (the zguide's slow joiner).
        Thread.sleep(forTimeInterval: 0.3)
        warn("listening on \(endpoints.joined(separator: " ")) for \(topics.map { "\"\($0)\"" }.joined(separator: " "))")
        let deadline = maxWait.map { Date().addingTimeInterval($0) }
        var received = 0
        while count.map({ received < $0 }) ?? true {
            let wait = deadline.map { Int($0.timeIntervalSinceNow * 1000) } ?? 1000
            if wait <= 0 {
                throw Failure(status: Status.noAnswer, line: "error: received \(received) of \(count ?? 1) messages within \(maxWait!.formatted()) s at \(endpoints.joined(separator: " "))")
            }
            let readable = (try? Poller.readable([socket], timeoutMilliseconds: min(wait, 1000))) ?? [false]
            guard readable[0] else { continue }
            while count.map({ received < $0 }) ?? true, let frames = try? socket.receiveMultipart(dontWait: true) {
                guard frames.count == 2 else { continue }
                received += 1
                emit(pretty ? prettyLine(topic: String(decoding: frames[0], as: UTF8.self), envelope: frames[1])
                            : jsonLine(topic: frames[0], envelope: frames[1]))
            }
        }
        withExtendedLifetime(context) {}
    }

    private func jsonLine(topic: Data, envelope: Data) -> String {
        let topicText = JSONValue.string(String(decoding: topic, as: UTF8.self)).jsonLine
        let isJSON = (try? JSONDecoder().decode(JSONValue.self, from: envelope)) != nil
        let event = isJSON ? String(decoding: envelope, as: UTF8.self) : JSONValue.string(String(decoding: envelope, as: UTF8.self)).jsonLine
        return "{\"topic\":\(topicText),\"event\":\(event)}"
    }
}

/// The events endpoint of each service, for `subscribe`.
struct EventEndpoints: ParsableArguments {
    @Option(name: .customLong("session-logger-events"), help: ArgumentHelp(
        "Session logger events (env LHT_SESSION_LOGGER_EVENTS, default tcp://127.0.0.1:7302).", valueName: "endpoint"))
    var sessionLogger: String?

    @Option(name: .customLong("planner-events"), help: ArgumentHelp(
        "Planner events (env LHT_PLANNER_EVENTS, default tcp://127.0.0.1:7312).", valueName: "endpoint"))
    var planner: String?

    @Option(name: .customLong("notifier-events"), help: ArgumentHelp(
        "Notifier events (env LHT_NOTIFIER_EVENTS, default tcp://127.0.0.1:7322).", valueName: "endpoint"))
    var notifier: String?

    @Option(name: .customLong("streak-events"), help: ArgumentHelp(
        "Streak events (env LHT_STREAK_EVENTS, default tcp://127.0.0.1:7332).", valueName: "endpoint"))
    var streak: String?

    init() {}

    func events(_ service: ServiceName) -> String {
        let given: String? = switch service {
        case .sessionLogger: sessionLogger
        case .reminderPlanner: planner
        case .notifier: notifier
        case .noalcStreak: streak
        }
        return given ?? service.environmentValue(.events) ?? service.defaultEndpoint(.events)
    }
}

/// One readable line for an event: its time, topic, seq and what it says.
func prettyLine(topic: String, envelope frame: Data) -> String {
    guard let envelope = try? JSONDecoder().decode(JSONValue.self, from: frame) else { return "\(topic) (unreadable envelope)" }
    let data = envelope["data"] ?? .null
    let head = "\(envelope["time"]?.stringValue ?? "?")  \(topic)  #\(envelope["seq"]?.intValue.map(String.init) ?? "?")"
    func field(_ name: String) -> String { data[name]?.stringValue ?? "?" }
    switch envelope["type"]?.stringValue ?? "" {
    case "notify":
        let actions = data["actions"]?.arrayItems.compactMap { $0["id"]?.stringValue } ?? []
        return head + "  \"\(field("title"))\" \(field("body"))"
            + (actions.isEmpty ? "" : "  [\(actions.joined(separator: " "))]") + "  id=\(field("notificationId"))"
            + (data["test"]?.boolValue == true ? "  (test)" : "")
    case "session.logged":
        return head + "  \(field("activity")) \(field("start")) – \(field("end"))  id=\(field("id"))"
    case "noalc.logged":
        return head + "  \(field("level")) for \(field("day"))  id=\(field("id"))"
    case "streak.updated":
        return head + "  streak \(data["streakDays"]?.intValue ?? 0) days, \(data["rewardsAvailable"]?.intValue ?? 0) jokers"
    case "reminder.changed":
        return head + (data["deleted"]?.boolValue == true ? "  deleted \(field("id"))" : "  \(field("activity")) at \(field("time"))  id=\(field("id"))")
    case let type where type.hasPrefix("reminder."):
        var text = head + "  \(field("activity")) \(field("day")) \(field("localTime"))"
        if let cause = data["cause"]?.stringValue { text += "  cause=\(cause)" }
        if data["late"]?.boolValue == true { text += "  (late)" }
        if data["test"]?.boolValue == true { text += "  (test)" }
        return text
    default:
        return head
    }
}

struct Action: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "action",
        abstract: "Answer a notification's quick action, e.g. noalc.steady (logs the level) or open.meditation.",
        discussion: "A NoAlc level alone (steady, easy, wild) means noalc.<level>.")

    @Argument(help: "The notification's id (<reminderId>@<instant>).")
    var notificationId: String

    @Argument(help: "The action: noalc.steady, noalc.easy, noalc.wild, open.meditation, open.workout.")
    var actionId: String

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let action = NoAlcLevel(rawValue: actionId) != nil ? "noalc.\(actionId)" : actionId
        let client = try Client(connection)
        let answer = try client.call(.notifier, "notification.action",
                                     .fields(["notificationId": .string(notificationId), "actionId": .string(action)]), as: JSONValue.self)
        if output.json { return emit(answer.rawText) }
        // Two reply shapes: {entry} for a NoAlc level, {deepLink} for open.*.
        if let entry = try? JSONDecoder().decode(NotificationEntryReply.self, from: answer.raw).entry {
            emit("logged NoAlc \(entry.level.rawValue) for \(entry.day) (\(entry.id))")
        } else if let link = try? JSONDecoder().decode(NotificationDeepLinkReply.self, from: answer.raw).deepLink {
            emit("open \(link)")
        } else {
            emit(answer.rawText)
        }
    }
}

struct Notifications: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications", abstract: "List the notifications the user was sent, oldest first.")

    @Option(help: "Only those after this notify seq.")
    var after: Int?

    @OptionGroup var user: UserOption
    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let client = try Client(connection)
        let answer = try client.call(.notifier, "notification.list",
                                     .fields(["userId": .string(user.id), "after": .int(after)]), as: NotificationListReply.self)
        if output.json { return emit(answer.rawText) }
        let list = answer.value.notifications
        guard !list.isEmpty else { return emit("no notifications for \(user.id)") }
        var table = Table("seq", "sent", "activity", "title", "actions", "id")
        for item in list {
            table.add(String(item.seq), item.sentAt.description, item.activity.rawValue + (item.test ? " (test)" : ""), item.title,
                      item.actions.map(\.id).joined(separator: ","), item.notificationId)
        }
        table.lines.forEach(emit)
    }
}
