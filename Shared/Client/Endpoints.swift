import LHTSchema

/// The sockets a service binds (PROTOCOL "Transport").
public enum SocketRole: String, CaseIterable, Sendable {
    case api, events, intake
}

/// The one endpoint table: every default endpoint, and the flag and environment variable that
/// override it, derived from the service and the socket. Services, `lht` and tests read it here.
extension ServiceName {
    /// The stem of the flags that name this service's endpoints to others: `--planner-api`,
    /// `--session-logger-events`, and `lht --planner`.
    public var flagStem: String {
        switch self {
        case .sessionLogger: "session-logger"
        case .reminderPlanner: "planner"
        case .notifier: "notifier"
        case .noalcStreak: "streak"
        }
    }

    /// The sockets this service binds.
    public var roles: [SocketRole] { self == .sessionLogger ? [.api, .events, .intake] : [.api, .events] }

    /// PROTOCOL's defaults: loopback, 73<service><socket> (7301 the session logger's api, 7312 the planner's events).
    public func defaultEndpoint(_ role: SocketRole) -> String {
        let service = switch self {
        case .sessionLogger: 0
        case .reminderPlanner: 1
        case .notifier: 2
        case .noalcStreak: 3
        }
        let socket = switch role {
        case .api: 1
        case .events: 2
        case .intake: 3
        }
        return "tcp://127.0.0.1:73\(service)\(socket)"
    }

    /// PROTOCOL "Operations": where the service serves Prometheus metrics by default, `host:port`
    /// over HTTP (7309, 7319, 7329, 7339: the ninth port of the service's range).
    public var defaultMetricsAddress: String {
        let service = switch self {
        case .sessionLogger: 0
        case .reminderPlanner: 1
        case .notifier: 2
        case .noalcStreak: 3
        }
        return "127.0.0.1:73\(service)9"
    }

    /// The flag another program takes for this service's socket: `session-logger-api`, `planner-events`.
    public func flag(_ role: SocketRole) -> String { "\(flagStem)-\(role.rawValue)" }

    /// Also accepted where a person names a service: `planner`, `streak`, `logger`.
    public init?(argument: String) {
        if let exact = ServiceName(rawValue: argument) {
            self = exact
        } else if argument == "logger" {
            self = .sessionLogger
        } else if let stem = ServiceName.allCases.first(where: { $0.flagStem == argument }) {
            self = stem
        } else {
            return nil
        }
    }
}

/// `LHT_` + the flag in upper case with `-` as `_` (PROTOCOL "Running the services").
public func environmentVariable(forFlag flag: String) -> String {
    "LHT_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
}

/// A flag value that is not a usable endpoint.
public struct EndpointError: Error, CustomStringConvertible {
    public let description: String
}

public enum Endpoint {
    /// Accepts `tcp://host:port` (port may be `*`), `ipc://path` and `inproc://name`.
    public static func validated(_ endpoint: String, flag: String) throws(EndpointError) -> String {
        let invalid = EndpointError(description: "--\(flag): \"\(endpoint)\" is not a ZeroMQ endpoint such as tcp://127.0.0.1:7301")
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") {
            guard endpoint.split(separator: "/", omittingEmptySubsequences: false).count > 2,
                  !endpoint.hasSuffix("//") else { throw invalid }
            return endpoint
        }
        guard endpoint.hasPrefix("tcp://") else { throw invalid }
        let address = endpoint.dropFirst("tcp://".count)
        guard let colon = address.lastIndex(of: ":"), colon != address.startIndex else { throw invalid }
        let port = address[address.index(after: colon)...]
        guard port == "*" || (UInt16(port).map { $0 > 0 } ?? false) else { throw invalid }
        return endpoint
    }

    /// A flag's value naming every instance of a service (PROTOCOL "Cluster": `tcp://a:7301,tcp://b:7301`),
    /// each element validated as `validated` does; an empty element is an error naming the flag.
    public static func list(_ value: String, flag: String) throws(EndpointError) -> [String] {
        try value.split(separator: ",", omittingEmptySubsequences: false).map { element throws(EndpointError) in
            guard !element.isEmpty else { throw EndpointError(description: "--\(flag): \"\(value)\" has an empty endpoint in its list") }
            return try validated(String(element), flag: flag)
        }
    }

    /// Whether binding `endpoint` reaches this machine only: a `tcp` host in 127.0.0.0/8, `::1` or
    /// `localhost` (not `0.0.0.0` or `*`), or an `ipc`/`inproc` endpoint.
    public static func isLoopback(_ endpoint: String) -> Bool {
        guard endpoint.hasPrefix("tcp://") else { return true }
        let address = endpoint.dropFirst("tcp://".count)
        guard let colon = address.lastIndex(of: ":") else { return false }
        var host = address[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
