import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import Logging
import Storage

/// The flags every service takes; their defaults come from the endpoint table (`ServiceName.defaultEndpoint`).
public struct CommonOptions: ParsableArguments {
    @Option(help: "Endpoint the api ROUTER binds (tcp://127.0.0.1:* picks a free port).")
    public var api: String?

    @Option(help: "Endpoint the events PUB binds.")
    public var events: String?

    @Option(name: .customLong("data-dir"), help: "Directory for the SQLite store (default ./.lht-data/<executable>).")
    public var dataDir: String?

    @Option(help: "Directory of CurveZMQ certificates (services/, clients/): turns security on (PROTOCOL \"Security\").")
    public var keys: String?

    @Flag(help: "Without --keys, allow binding addresses other than loopback (plaintext health data on the network).")
    public var insecure = false

    @Flag(name: .customLong("accept-upstream-reset"),
          help: "Follow an upstream whose event log is a new history (its data was wiped or replaced) from its start.")
    public var acceptUpstreamReset = false

    @Option(help: "host:port where Prometheus metrics are served over HTTP at /metrics (port 0: any free port), or off (default: the service's 73x9 on loopback).")
    public var metrics: String?

    @Option(name: .customLong("log-format"), help: "Log lines on standard error: text or json (default text).")
    public var logFormat: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default info).")
    public var logLevel: String?

    @Option(help: "PostgreSQL URL postgresql://user[:password]@host[:port]/dbname[?…] for a cluster's shared state (PROTOCOL \"Cluster\"); default: SQLite in --data-dir.")
    public var database: String?

    @Option(help: "This instance's name in its logs, health and metrics (default <hostname>:<pid>).")
    public var instance: String?

    public init() {}

    public static var flagNames: [String] { longFlagNames }

    /// `--instance`, else `<hostname>:<pid>`: read by the settings and, before them, by the logging set-up.
    public func instanceName() throws -> String {
        guard let instance else {
            var name = [CChar](repeating: 0, count: 256)
            let host = gethostname(&name, name.count - 1) == 0
                ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
            return "\(host):\(getpid())"
        }
        // It goes into `key=value` log lines and a metrics label as it is.
        guard !instance.isEmpty, !instance.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
        else { throw ValidationError("--instance: \"\(instance.prefix(80))\" is not a name (empty, or with spaces or control characters)") }
        return instance
    }

    /// `--database` checked for its form only (the store connects): a PostgreSQL URL, or nil for SQLite.
    func databaseURL() throws -> String? {
        guard let database else { return nil }
        guard database.hasPrefix("postgresql://") || database.hasPrefix("postgres://") else {
            throw ValidationError("--database: \"\(Self.withoutPassword(database).prefix(200))\" is not a PostgreSQL URL postgresql://user[:password]@host[:port]/dbname")
        }
        return database
    }

    /// `url` fit for an error or a log line: the password of `user:password@` and of `password=` as `***`.
    public static func withoutPassword(_ url: String) -> String {
        var text = url
        // The user information is everything before the last `@` ahead of the query; its password, after its first `:`.
        let userStart = text.range(of: "://")?.upperBound ?? text.startIndex
        let queryStart = text.firstIndex(of: "?") ?? text.endIndex
        if let at = text[userStart..<queryStart].lastIndex(of: "@"), let colon = text[userStart..<at].firstIndex(of: ":") {
            text.replaceSubrange(text.index(after: colon)..<at, with: "***")
        }
        // libpq also reads a password from the query string.
        if let query = text.firstIndex(of: "?") {
            let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false)
                .map { $0.hasPrefix("password=") ? "password=***" : String($0) }
            text = String(text[...query]) + parameters.joined(separator: "&")
        }
        return text
    }
}

/// A service's options: the common ones and its own. The executable's `main` reads the common
/// ones for logging and metrics (`ServiceCommandLine.parseOrExit`, `serve`).
public protocol ServiceArguments: ParsableArguments {
    var common: CommonOptions { get }
}

extension ServiceArguments {
    /// The flags an `LHT_*` variable may set (`ServiceCommandLine.withEnvironment`): all of them.
    public static var flagNames: [String] { longFlagNames }
}

/// What `_dumpHelp` says of a type's arguments, as far as `longFlagNames` reads it.
private struct ArgumentsDescription: Decodable {
    struct Command: Decodable { let arguments: [Argument]? }
    struct Argument: Decodable {
        struct Name: Decodable { let kind: String; let name: String }
        let kind: String
        let names: [Name]?
    }
    let command: Command
}

extension ParsableArguments {
    /// The long names of the options and flags this type declares (its option groups' included,
    /// `--help` aside), read from the parser's own description of them, so no list repeats them.
    public static var longFlagNames: [String] {
        guard let description = try? JSONDecoder().decode(ArgumentsDescription.self, from: Data(_dumpHelp().utf8)) else { return [] }
        return (description.command.arguments ?? []).filter { $0.kind != "positional" }
            .compactMap { $0.names?.first { $0.kind == "long" }?.name }
            .filter { $0 != "help" && $0 != "version" }
    }
}

/// Where `/metrics` is served (PROTOCOL "Operations").
public enum MetricsAddress: Sendable, Equatable, CustomStringConvertible {
    /// `--metrics off`.
    case off
    /// `host:port` (IPv4, `localhost` or `[IPv6]`); `explicit` when given by flag or environment,
    /// false for the table's default, which only warns when it cannot be bound.
    case http(host: String, port: UInt16, explicit: Bool)

    public var description: String {
        switch self {
        case .off: "off"
        case .http(let host, let port, _): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    /// `off`, or `host:port`; nil from `given` means the service's default.
    public init(_ given: String?, service: ServiceName) throws {
        let text = given ?? service.defaultMetricsAddress
        if text == "off" {
            self = .off
            return
        }
        let invalid = ValidationError("--metrics: \"\(text)\" is not host:port (127.0.0.1:7309, [::1]:7309) or off")
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { throw invalid }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            var address = in6_addr()
            guard inet_pton(AF_INET6, host, &address) == 1 else { throw invalid }
        } else {
            if host == "localhost" { host = "127.0.0.1" }
            var address = in_addr()
            guard inet_pton(AF_INET, host, &address) == 1 else { throw invalid }
        }
        self = .http(host: host, port: port, explicit: given != nil)
    }
}

/// One service's resolved common settings.
public struct ServiceSettings: Sendable {
    public let name: ServiceName
    public let api: String
    public let events: String
    public let dataDirectory: URL
    /// The certificate directory; nil: plaintext, loopback only (unless `insecure`).
    public let keysDirectory: String?
    /// The service's own certificate and the key directory, loaded when `--keys` is given.
    public let security: SecuritySettings?
    public let insecure: Bool
    /// Where `/metrics` is served (the executable serves it; in-process services do not).
    public let metrics: MetricsAddress
    public let log: LogSettings
    /// Follow an upstream's new history from its start instead of halting (`UpstreamFeed`).
    public let acceptUpstreamReset: Bool
    /// The PostgreSQL URL the store is to use (PROTOCOL "Cluster"); nil: SQLite in `dataDirectory`.
    /// It may hold a password: log it only through `CommonOptions.withoutPassword`.
    public let database: String?
    /// This instance's name (`--instance`, default `<hostname>:<pid>`), for logs, `health` and metrics.
    public let instance: String

    public init(_ name: ServiceName, common: CommonOptions) throws {
        self.name = name
        acceptUpstreamReset = common.acceptUpstreamReset
        database = try common.databaseURL()
        instance = try common.instanceName()
        keysDirectory = common.keys
        insecure = common.insecure
        log = try LogSettings(common)
        api = try Endpoint.validated(common.api ?? name.defaultEndpoint(.api), flag: "api")
        events = try Endpoint.validated(common.events ?? name.defaultEndpoint(.events), flag: "events")
        for (endpoint, flag) in [(api, "api"), (events, "events")] {
            try Self.requireLocal(endpoint, flag: flag, keys: keysDirectory, insecure: insecure)
        }
        metrics = try MetricsAddress(common.metrics, service: name)
        if metrics != .off {
            // The same rule as the ZeroMQ binds: without keys, loopback only unless --insecure.
            try Self.requireLocal("tcp://\(metrics)", flag: "metrics", keys: keysDirectory, insecure: insecure)
        }
        do {
            security = try common.keys.map { try SecuritySettings(directory: $0, service: name) }
        } catch {
            throw ValidationError("--keys: \(error)")
        }
        do {
            dataDirectory = try DataDirectory.prepared(common.dataDir ?? "./.lht-data/\(name.rawValue)")
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// Without keys a service is for one machine only (PROTOCOL "Security"): an endpoint it binds
    /// must be loopback, unless the operator said `--insecure`.
    public func requireLocal(_ endpoint: String, flag: String) throws {
        try Self.requireLocal(endpoint, flag: flag, keys: keysDirectory, insecure: insecure)
    }

    private static func requireLocal(_ endpoint: String, flag: String, keys: String?, insecure: Bool) throws {
        guard keys == nil, !insecure, !Endpoint.isLoopback(endpoint) else { return }
        throw ValidationError("--\(flag): \(endpoint) is reachable from other machines; give --keys DIR to speak CurveZMQ, or --insecure to serve plaintext anyway")
    }
}

extension Endpoint {
    /// Another service's endpoints from its flag (`--planner-events`, a list of its instances), or the table's default.
    public static func of(_ service: ServiceName, _ role: SocketRole, given: String?) throws -> [String] {
        try list(given ?? service.defaultEndpoint(role), flag: service.flag(role))
    }
}

public enum ZoneOption {
    public static func validated(_ identifier: String, flag: String = "time-zone") throws -> ZoneID {
        guard let zone = ZoneID(identifier) else { throw ValidationError("--\(flag): \"\(identifier)\" is not an IANA time zone") }
        return zone
    }
}

/// Parsing as PROTOCOL.md "Running the services" says: `--flag value` or `--flag=value`, each flag
/// also read from `LHT_<FLAG>` (a flag given on the command line wins), and any unusable flag is one
/// line on standard error and exit status 2.
public enum ServiceCommandLine {
    /// Flags that are switches (no value).
    static let switchNames: Set<String> = ["insecure", "accept-upstream-reset"]

    /// `arguments` with a `--flag=value` added for every flag not given but set in the environment.
    public static func withEnvironment(_ arguments: [String], flags: [String], environment: [String: String]) -> [String] {
        var result = arguments
        for flag in flags {
            let given = arguments.contains { $0 == "--\(flag)" || $0.hasPrefix("--\(flag)=") }
            guard !given, let value = environment[environmentVariable(forFlag: flag)] else { continue }
            if switchNames.contains(flag) {
                // A switch takes no value: `LHT_INSECURE=1` or `true` turns it on.
                if ["1", "true"].contains(value.lowercased()) { result.append("--\(flag)") }
            } else {
                result.append("--\(flag)=\(value)")
            }
        }
        return result
    }

    /// Parses and validates, or exits: 0 after `--help`, 2 with one line on standard error otherwise.
    public static func parseOrExit<Options: ParsableArguments>(_ type: Options.Type, flags: [String],
                                                                build: (Options) throws -> Void = { _ in }) -> Options {
        let arguments = withEnvironment(Array(CommandLine.arguments.dropFirst()), flags: flags, environment: ProcessInfo.processInfo.environment)
        do {
            let options = try Options.parse(arguments)
            if let service = options as? any ServiceArguments {
                // Before anything can log: the settings below may already want to.
                bootstrapLogging(service: ProcessInfo.processInfo.processName, try LogSettings(service.common),
                                 instance: try service.common.instanceName())
            }
            try build(options)
            return options
        } catch {
            if Options.exitCode(for: error) == .success {
                print(Options.fullMessage(for: error))
                exit(0)
            }
            let message = (error as? ValidationError)?.message ?? (error as? EndpointError)?.description ?? Options.message(for: error)
            let line = message.split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            FileHandle.standardError.write(Data("error: \(line)\n".utf8))
            exit(2)
        }
    }

    /// Prints the ready line, flushed, for whoever started the service.
    public static func announce(_ line: String) {
        // FileHandle writes straight to the descriptor: nothing waits in a stdio buffer.
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
