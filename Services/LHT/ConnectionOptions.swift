import ArgumentParser
import Foundation
import LHTClient
import LHTSchema

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
