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

    /// A request that is not safe to repeat reached an instance that did not answer: it was not sent to
    /// another, and whether it was carried out is unknown.
    static func mayHaveBeenDone(_ service: ServiceName, endpoint: String, op: String, seconds: Double) -> Failure {
        Failure(status: Status.noAnswer,
                line: "error: \(service.rawValue) did not answer \(op) at \(endpoint) within \(seconds.formatted()) s; it may have been "
                    + "carried out, so it was not sent to another instance (check before trying again)")
    }

    static func local(_ message: String) -> Failure { Failure(status: Status.local, line: "error: \(message)") }
}

extension Double {
    /// 3 → "3", 0.5 → "0.5".
    func formatted() -> String { self == rounded() ? String(Int(self)) : String(self) }
}

/// Which socket an `EndpointOptions` group names: the api every command calls, or the events `subscribe` follows.
protocol EndpointRole {
    static var role: SocketRole { get }
}

enum APIRole: EndpointRole { static let role = SocketRole.api }
enum EventsRole: EndpointRole { static let role = SocketRole.events }

extension ServiceName {
    /// How the help names this service beside its api flag and beside its events flag.
    func helpName(_ role: SocketRole) -> String {
        switch self {
        case .sessionLogger: "Session logger"
        case .reminderPlanner: role == .api ? "Reminder planner" : "Planner"
        case .notifier: "Notifier"
        case .noalcStreak: role == .api ? "NoAlc streak" : "Streak"
        }
    }

    /// lht's flag for this service's socket: the stem for the api (`--planner`), the table's flag otherwise (`--planner-events`).
    func lhtFlag(_ role: SocketRole) -> String { role == .api ? flagStem : flag(role) }

    /// `LHT_PLANNER_API`, `LHT_STREAK_EVENTS`: the variable beside the flag that names this socket.
    func environmentValue(_ role: SocketRole) -> String? { environment[environmentVariable(forFlag: flag(role))] }

    /// "Reminder planner api, or its instances' (env LHT_PLANNER_API, default tcp://…:7311).", from the endpoint table.
    func endpointHelp(_ role: SocketRole) -> ArgumentHelp {
        ArgumentHelp("\(helpName(role)) \(role.rawValue), or its instances', comma-separated (env \(environmentVariable(forFlag: flag(role))), "
                     + "default \(defaultEndpoint(role))).", valueName: "endpoint")
    }
}

/// One endpoint option per service for one socket role, named and documented from the endpoint table.
/// ArgumentParser needs a property per option; `given` is the one place that maps them to services.
struct EndpointOptions<Role: EndpointRole>: ParsableArguments {
    @Option(name: .customLong(ServiceName.sessionLogger.lhtFlag(Role.role)), help: ServiceName.sessionLogger.endpointHelp(Role.role))
    var sessionLogger: String?

    @Option(name: .customLong(ServiceName.reminderPlanner.lhtFlag(Role.role)), help: ServiceName.reminderPlanner.endpointHelp(Role.role))
    var planner: String?

    @Option(name: .customLong(ServiceName.notifier.lhtFlag(Role.role)), help: ServiceName.notifier.endpointHelp(Role.role))
    var notifier: String?

    @Option(name: .customLong(ServiceName.noalcStreak.lhtFlag(Role.role)), help: ServiceName.noalcStreak.endpointHelp(Role.role))
    var streak: String?

    init() {}

    private static var given: [ServiceName: KeyPath<EndpointOptions, String?>] {
        [.sessionLogger: \.sessionLogger, .reminderPlanner: \.planner, .notifier: \.notifier, .noalcStreak: \.streak]
    }

    /// The flag, else the LHT_* variable, else the table's default: as given, a comma-separated list of
    /// the service's instances (PROTOCOL "Cluster") or one endpoint.
    func endpoint(_ service: ServiceName) -> String {
        EndpointOptions.given[service].flatMap { self[keyPath: $0] } ?? service.environmentValue(Role.role) ?? service.defaultEndpoint(Role.role)
    }

    /// Each instance's endpoint of that list.
    func endpoints(_ service: ServiceName) throws(EndpointError) -> [String] {
        try Endpoint.list(endpoint(service), flag: service.lhtFlag(Role.role))
    }

    func validate() throws {
        for service in ServiceName.allCases { _ = try endpoints(service) }
    }

    /// Whether the flag or its variable named this service's socket (rather than the default).
    func isGiven(_ service: ServiceName) -> Bool {
        EndpointOptions.given[service].flatMap { self[keyPath: $0] } != nil || service.environmentValue(Role.role) != nil
    }
}

/// Endpoint, key and timeout options every command takes.
struct Connection: ParsableArguments {
    @OptionGroup var apis: EndpointOptions<APIRole>

    /// `--keys`, `--cert`, `--server-keys`: CurveZMQ to a deployment with keys (Keys.swift).
    @OptionGroup var security: KeyOptions

    @Option(help: ArgumentHelp("Seconds to wait for each reply before giving up with status 3 (env LHT_TIMEOUT).", valueName: "seconds"))
    var timeout: Double?

    init() {}

    func validate() throws {
        guard (0.05...600).contains(seconds) else { throw ValidationError("--timeout: \(seconds.formatted()) is not 0.05...600 seconds") }
    }

    var seconds: Double { timeout ?? environment["LHT_TIMEOUT"].flatMap(Double.init) ?? 3 }

    var milliseconds: Int { Int(seconds * 1000) }

    /// `service`'s api as given (one endpoint or a list), for messages.
    func api(_ service: ServiceName) -> String { apis.endpoint(service) }

    /// `service`'s instances' apis (`validate` has checked them).
    func apiEndpoints(_ service: ServiceName) throws(Failure) -> [String] {
        do {
            return try apis.endpoints(service)
        } catch {
            throw Failure(status: Status.usage, line: "error: \(error)")
        }
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

/// One command's connections to the services: a Lazy-Pirate `ServiceClient` per endpoint, every call bounded by
/// --timeout, speaking CurveZMQ when keys are given (each service with its own public key).
final class Client {
    let connection: Connection
    let context: Context
    /// nil: plaintext.
    let keys: ClientKeys?
    private var clients: [ServiceName: ServiceClient] = [:]

    init(_ connection: Connection) throws(Failure) {
        self.connection = connection
        keys = try connection.security.load()
        do {
            context = try Context()
        } catch {
            throw Failure.local("cannot open a ZeroMQ context: \(error)")
        }
    }

    private func client(_ service: ServiceName) throws(Failure) -> ServiceClient {
        if let client = clients[service] { return client }
        let client = ServiceClient(context: context, endpoints: try connection.apiEndpoints(service), credentials: try keys?.credentials(for: service))
        clients[service] = client
        return client
    }

    /// Calls `op` at the service the catalog names for it (`health` and `events.since`, which every
    /// service answers, at `service`); the reply decoded as the op's type, with its data bytes for --json.
    func call<Request, Reply>(_ op: Op<Request, Reply>, _ request: Request, at service: ServiceName? = nil) throws(Failure) -> Answer<Reply> {
        guard let service = service ?? op.info.service else { preconditionFailure("\(op.name) is answered by every service: say which") }
        let client = try client(service)
        do {
            let (value, data) = try client.callWithData(op, request, timeoutMilliseconds: connection.milliseconds)
            return Answer(value: value, raw: data)
        } catch {
            throw Failure(error, service: service, op: op.name, client: client, seconds: connection.seconds)
        }
    }
}

extension Failure {
    /// A `ServiceClient` failure as lht reports it: no answer (status 3, naming the endpoint), or the
    /// service's own error (status 1, `error: <code> (<field>): <message>`).
    init(_ error: WireError, service: ServiceName, op: String, client: ServiceClient, seconds: Double) {
        // ServiceClient's own "did not answer" is `unavailable` without a field after a call that got no
        // reply; a service that answers `unavailable` (the notifier when the session logger is down) replied.
        switch client.lastCall {
        case .unanswered where error.code == .unavailable && error.field == nil:
            self = .noAnswer(service, endpoint: "\(client.instances)", op: op, seconds: seconds)
        case .mayHaveBeenDone(let endpoint) where error.code == .unavailable && error.field == nil:
            self = .mayHaveBeenDone(service, endpoint: endpoint, op: op, seconds: seconds)
        case .answered(let tries) where tries > 1 && error.code == .notFound && op == Ops.reminderDelete.name:
            // The earlier, unanswered try went to an instance that may have deleted it.
            self = .service(code: error.code.rawValue, field: error.field,
                            message: error.message + " (an earlier try went unanswered and may have deleted it)")
        default:
            self = .service(code: error.code.rawValue, field: error.field, message: error.message)
        }
    }
}

// MARK: Request values from arguments

/// A command-line text as the wire type the request carries, read by the schema's own decoder: a bad
/// value fails as the service would answer it (`error: invalid_argument (data.timeZone): …`, status 1).
func wireValue<Value: Decodable>(_ text: String, field: String) throws(Failure) -> Value {
    try wireValue(JSONValue.string(text), field: field)
}

/// As above for an option left out: nil, which the request leaves out.
func wireValue<Value: Decodable>(_ text: String?, field: String) throws(Failure) -> Value? {
    guard let text else { return nil }
    return try wireValue(JSONValue.string(text), field: field) as Value
}

/// As above, for a list (`--days`): a bad item is named by its index (`data.weekdays[2]`).
func wireValue<Value: Decodable>(_ items: [String], field: String) throws(Failure) -> Value {
    try wireValue(JSONValue.array(items.map(JSONValue.string)), field: field)
}

private func wireValue<Value: Decodable>(_ json: JSONValue, field: String) throws(Failure) -> Value {
    do {
        return try JSONDecoder().decode(Value.self, from: WireJSON.encode(json))
    } catch {
        let wire = WireError(decoding: error, under: "data.\(field)")
        throw Failure.service(code: wire.code.rawValue, field: wire.field, message: wire.message)
    }
}

extension UserOption {
    /// `--user` (or LHT_USER) as the requests' `userId`.
    func userID() throws(Failure) -> UserID { try wireValue(id, field: "userId") }
}

extension JSONValue {
    /// One line of JSON (keys sorted).
    var jsonLine: String { (try? WireJSON.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null" }
}

/// Parses an RFC 3339 instant option.
func parseInstant(_ text: String, option: String) throws -> Instant {
    guard let instant = Instant(rfc3339: text) else {
        throw ValidationError("\(option): \"\(text)\" is not an RFC 3339 instant such as 2026-11-23T18:00:00+01:00")
    }
    return instant
}

/// The user's time zone as the planner has it (defaults for a user never set).
func userZone(_ client: Client, user: UserID) throws(Failure) -> (zone: ZoneID, settings: UserSettings) {
    let settings = try client.call(Ops.userGet, UserRequest(userId: user)).value
    return (settings.timeZone, settings)
}

/// Writes a line to standard output at once (for streams read by other programs).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
