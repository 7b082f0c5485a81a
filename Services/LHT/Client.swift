import ArgumentParser
import Foundation
import LHTSchema
import LHTClient
import ZeroMQ

extension ServiceName {
    /// Whether a subscription to `prefix` can match anything this service publishes.
    func publishes(matching prefix: String) -> Bool {
        Events.published(by: self).contains { prefix.hasPrefix($0.name + ".") || ($0.name + ".").hasPrefix(prefix) }
    }

    /// `LHT_PLANNER_API`, `LHT_STREAK_EVENTS`: the variable beside the flag that names this socket.
    func environmentValue(_ role: SocketRole) -> String? { environment[environmentVariable(forFlag: flag(role))] }
}

let environment = ProcessInfo.processInfo.environment

/// Exit statuses, as `lht --help` documents them.
enum Status {
    static let ok: Int32 = 0
    static let serviceError: Int32 = 1
    static let usage: Int32 = 2
    static let noAnswer: Int32 = 3
    static let local: Int32 = 4
}

/// Why a command failed, as one line on standard error and an exit status.
struct Failure: Error {
    let status: Int32
    let line: String

    /// The service answered with an error: `error: <code> (<field>): <message>`.
    static func service(code: String, field: String?, message: String) -> Failure {
        // Messages often repeat the field ("data.start: …"); say it once.
        var text = message
        if let field, text.hasPrefix(field + ": ") { text.removeFirst(field.count + 2) }
        return Failure(status: Status.serviceError, line: "error: \(code)" + (field.map { " (\($0))" } ?? "") + ": \(text)")
    }

    static func noAnswer(_ service: ServiceName, endpoint: String, op: String, seconds: Double) -> Failure {
        Failure(status: Status.noAnswer,
                line: "error: \(service.rawValue) did not answer \(op) at \(endpoint) within \(seconds.formatted()) s (is it running?)")
    }

    static func badReply(_ service: ServiceName, op: String, _ detail: String) -> Failure {
        Failure(status: Status.serviceError, line: "error: \(service.rawValue) sent a reply to \(op) that lht cannot read: \(detail)")
    }

    static func local(_ message: String) -> Failure { Failure(status: Status.local, line: "error: \(message)") }
}

extension Double {
    /// 3 → "3", 0.5 → "0.5".
    func formatted() -> String { self == rounded() ? String(Int(self)) : String(self) }
}

/// Endpoint and timeout options every command takes.
struct Connection: ParsableArguments {
    @Option(name: .customLong("session-logger"), help: ArgumentHelp(
        "Session logger api (env LHT_SESSION_LOGGER_API, default tcp://127.0.0.1:7301).", valueName: "endpoint"))
    var sessionLogger: String?

    @Option(help: ArgumentHelp("Reminder planner api (env LHT_PLANNER_API, default tcp://127.0.0.1:7311).", valueName: "endpoint"))
    var planner: String?

    @Option(help: ArgumentHelp("Notifier api (env LHT_NOTIFIER_API, default tcp://127.0.0.1:7321).", valueName: "endpoint"))
    var notifier: String?

    @Option(help: ArgumentHelp("NoAlc streak api (env LHT_STREAK_API, default tcp://127.0.0.1:7331).", valueName: "endpoint"))
    var streak: String?

    @Option(help: ArgumentHelp("Seconds to wait for each reply before giving up with status 3 (env LHT_TIMEOUT).", valueName: "seconds"))
    var timeout: Double?

    init() {}

    func validate() throws {
        for service in ServiceName.allCases { _ = try Endpoint.validated(api(service), flag: service.flagStem) }
        guard (0.05...600).contains(seconds) else { throw ValidationError("--timeout: \(seconds.formatted()) is not 0.05...600 seconds") }
    }

    var seconds: Double { timeout ?? environment["LHT_TIMEOUT"].flatMap(Double.init) ?? 3 }

    func api(_ service: ServiceName) -> String {
        let given: String? = switch service {
        case .sessionLogger: sessionLogger
        case .reminderPlanner: planner
        case .notifier: notifier
        case .noalcStreak: streak
        }
        return given ?? service.environmentValue(.api) ?? service.defaultEndpoint(.api)
    }
}

/// `--json`, for every command that prints data.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print the service's reply data as one line of JSON instead of text.")
    var json = false

    init() {}
}

/// `--user`, defaulting to LHT_USER.
struct UserOption: ParsableArguments {
    @Option(help: ArgumentHelp("The user (env LHT_USER).", valueName: "user"))
    var user: String?

    init() {}

    func validate() throws {
        if user == nil && environment["LHT_USER"] == nil { throw ValidationError("--user is required (or set LHT_USER)") }
    }

    var id: String { user ?? environment["LHT_USER"] ?? "" }
}

/// A successful reply: the decoded data and its bytes as the service sent them.
struct Answer<Value> {
    let value: Value
    let raw: Data

    var rawText: String { String(decoding: raw, as: UTF8.self) }
}

extension Answer: Sendable where Value: Sendable {}

/// One command's connections to the services: a Lazy-Pirate `APIClient` per endpoint, every call bounded by --timeout.
final class Client {
    let connection: Connection
    let context: Context
    private var clients: [ServiceName: ServiceClient] = [:]

    init(_ connection: Connection) throws(Failure) {
        self.connection = connection
        do {
            context = try Context()
        } catch {
            throw Failure.local("cannot open a ZeroMQ context: \(error)")
        }
    }

    private func client(_ service: ServiceName) -> ServiceClient {
        if let client = clients[service] { return client }
        let client = ServiceClient(context: context, endpoint: connection.api(service))
        clients[service] = client
        return client
    }

    /// Sends `{"v":1,"op":op,"data":data}` and decodes the reply's data as `Value`.
    func call<Value: Decodable>(_ service: ServiceName, _ op: String, _ data: JSONValue, as type: Value.Type) throws(Failure) -> Answer<Value> {
        let raw = try callRaw(service, op, data)
        do {
            return Answer(value: try JSONDecoder().decode(Value.self, from: raw), raw: raw)
        } catch {
            throw Failure.badReply(service, op: op, "\(error)".prefix(200).description)
        }
    }

    /// As `call`, but returns the reply's data bytes only.
    func callRaw(_ service: ServiceName, _ op: String, _ data: JSONValue) throws(Failure) -> Data {
        let client = client(service)
        let request: Data
        do {
            request = try wireEncoder().encode(RequestFrame(op: op, data: data))
        } catch {
            throw Failure.local("cannot encode the \(op) request: \(error)")
        }
        guard let reply = client.exchange(request, timeoutMilliseconds: Int(connection.seconds * 1000)) else {
            throw Failure.noAnswer(service, endpoint: client.endpoint, op: op, seconds: connection.seconds)
        }
        guard let frame = try? JSONDecoder().decode(JSONValue.self, from: reply) else {
            throw Failure.badReply(service, op: op, "not JSON")
        }
        guard frame["ok"]?.boolValue == true, let data = frame["data"] else {
            let error = frame["error"]
            throw Failure.service(code: error?["code"]?.stringValue ?? "unknown", field: error?["field"]?.stringValue,
                                  message: error?["message"]?.stringValue ?? "no message")
        }
        return Reply.dataBytes(of: reply) ?? ((try? wireEncoder().encode(data)) ?? Data("null".utf8))
    }
}

// MARK: Building request data

extension JSONValue {
    /// An object from pairs whose nil values are left out.
    static func fields(_ pairs: KeyValuePairs<String, JSONValue?>) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (key, value) in pairs { if let value { object[key] = value } }
        return .object(object)
    }

    static func text(_ value: String?) -> JSONValue? { value.map(JSONValue.string) }
    static func int(_ value: Int?) -> JSONValue? { value.map { .number(Double($0)) } }
    static func flag(_ value: Bool?) -> JSONValue? { value.map(JSONValue.bool) }

    var arrayItems: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }

    /// One line of JSON (keys sorted).
    var jsonLine: String { (try? wireEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null" }
}

/// Parses an RFC 3339 instant option.
func parseInstant(_ text: String, option: String) throws -> Instant {
    guard let instant = Instant(rfc3339: text) else {
        throw ValidationError("\(option): \"\(text)\" is not an RFC 3339 instant such as 2026-11-23T18:00:00+01:00")
    }
    return instant
}

/// The user's time zone as the planner has it (defaults for a user never set).
func userZone(_ client: Client, user: String) throws(Failure) -> (zone: ZoneID, settings: UserSettings) {
    let settings = try client.call(.reminderPlanner, "user.get", .fields(["userId": .string(user)]), as: UserSettings.self).value
    return (settings.timeZone, settings)
}

/// Writes a line to standard output at once (for streams read by other programs).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
