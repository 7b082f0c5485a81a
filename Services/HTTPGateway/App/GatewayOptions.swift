import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Logging
import ServiceHost

/// The gateway's flags (PROTOCOL "HTTP gateway"), each also read from `LHT_<FLAG>`.
public struct GatewayOptions: ParsableArguments {
    @Option(help: "host:port the HTTP server binds (default 127.0.0.1:7380; port 0: any free port).")
    public var http: String?

    @Option(help: "Directory of CurveZMQ certificates: connect as service http-gateway and require bearer tokens (DIR/tokens/).")
    public var keys: String?

    @Option(help: "host:port where Prometheus metrics are served at /metrics, or off (default 127.0.0.1:7389).")
    public var metrics: String?

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain: serve HTTPS (with --tls-key).")
    public var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: "PEM private key of --tls-cert.")
    public var tlsKey: String?

    @Option(name: .customLong("allow-origin"), help: "An origin allowed by CORS (e.g. https://example.org, or *); default none.")
    public var allowOrigin: String?

    @Option(name: .customLong("web-dir"), help: "The web app's files (default: Services/HTTPGateway/Web found above the executable or the working directory).")
    public var webDir: String?

    @Option(name: .customLong("session-logger-api")) public var sessionLoggerAPI: String?
    @Option(name: .customLong("session-logger-events")) public var sessionLoggerEvents: String?
    @Option(name: .customLong("planner-api")) public var plannerAPI: String?
    @Option(name: .customLong("planner-events")) public var plannerEvents: String?
    @Option(name: .customLong("notifier-api")) public var notifierAPI: String?
    @Option(name: .customLong("notifier-events")) public var notifierEvents: String?
    @Option(name: .customLong("streak-api")) public var streakAPI: String?
    @Option(name: .customLong("streak-events")) public var streakEvents: String?

    @Flag(help: "Allow plaintext HTTP on an address other than loopback (a TLS proxy in front), or no keys there.")
    public var insecure = false

    @Option(name: .customLong("keepalive-seconds"), help: "Seconds between comment lines on an event stream (default 15).")
    public var keepaliveSeconds: Double?

    @Option(name: .customLong("log-format"), help: "text or json (default text).")
    public var logFormat: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default info).")
    public var logLevel: String?

    public init() {}

    /// The flags an `LHT_*` variable may set (`ServiceCommandLine.withEnvironment`): all of them, read
    /// from the declarations above as the services' are.
    public static var flagNames: [String] { longFlagNames }

    func given(_ service: ServiceName, _ role: SocketRole) -> String? {
        switch (service, role) {
        case (.sessionLogger, .api): sessionLoggerAPI
        case (.sessionLogger, _): sessionLoggerEvents
        case (.reminderPlanner, .api): plannerAPI
        case (.reminderPlanner, _): plannerEvents
        case (.notifier, .api): notifierAPI
        case (.notifier, _): notifierEvents
        case (.noalcStreak, .api): streakAPI
        case (.noalcStreak, _): streakEvents
        }
    }

    public func logSettings() throws -> LogSettings {
        guard let format = LogFormat(rawValue: logFormat ?? "text") else { throw ValidationError("--log-format: \"\(logFormat ?? "")\" is not text or json") }
        guard let level = Logger.Level(rawValue: logLevel ?? "info") else { throw ValidationError("--log-level: \"\(logLevel ?? "")\" is not a level") }
        return LogSettings(format: format, level: level)
    }
}

/// The flags resolved and checked before anything is bound.
public struct GatewaySettings: Sendable {
    public static let executable = "http-gateway"
    public let host: String
    public let port: Int
    public let tls: (certificate: String, key: String)?
    public let keys: KeyDirectory?
    /// The gateway's own pair, to connect to the services as a service.
    public let certificate: Certificate?
    public let upstreams: [ServiceName: (api: [String], events: [String])]
    public let metrics: MetricsAddress
    public let allowOrigin: String?
    public let webDirectory: String?
    public let keepaliveSeconds: Double
    public let insecure: Bool

    public init(_ options: GatewayOptions, executablePath: String = CommandLine.arguments[0]) throws {
        (host, port) = try Self.hostAndPort(options.http ?? "127.0.0.1:7380", flag: "http")
        switch (options.tlsCert, options.tlsKey) {
        case (nil, nil): tls = nil
        case (let cert?, let key?):
            for (path, flag) in [(cert, "tls-cert"), (key, "tls-key")] where !FileManager.default.isReadableFile(atPath: path) {
                throw ValidationError("--\(flag): \(path) cannot be read")
            }
            tls = (cert, key)
        default: throw ValidationError("--tls-cert and --tls-key go together")
        }
        insecure = options.insecure
        let loopback = Endpoint.isLoopback("tcp://\(host.contains(":") ? "[\(host)]" : host):\(port)")
        if !loopback, !insecure {
            if tls == nil { throw ValidationError("--http: \(host):\(port) is reachable from other machines; give --tls-cert/--tls-key, or --insecure behind a TLS proxy") }
            if options.keys == nil { throw ValidationError("--http: \(host):\(port) is reachable from other machines; give --keys DIR so callers need tokens, or --insecure") }
        }
        keys = options.keys.map(KeyDirectory.init)
        do {
            certificate = try keys?.serviceCertificate(Self.executable)
            if let keys { for service in ServiceName.allCases { _ = try keys.servicePublicKey(service.rawValue) } }
        } catch {
            throw ValidationError("--keys: \(error) (lht keys init --upgrade DIR adds the gateway's pair to an older key directory)")
        }
        var upstreams: [ServiceName: (api: [String], events: [String])] = [:]
        for service in ServiceName.allCases {
            upstreams[service] = (try Endpoint.of(service, .api, given: options.given(service, .api)),
                                  try Endpoint.of(service, .events, given: options.given(service, .events)))
        }
        self.upstreams = upstreams
        metrics = try MetricsAddress.gateway(options.metrics)
        allowOrigin = options.allowOrigin
        webDirectory = options.webDir ?? Self.findWebDirectory(from: [executablePath, FileManager.default.currentDirectoryPath])
        keepaliveSeconds = options.keepaliveSeconds ?? 15
        guard keepaliveSeconds > 0 else { throw ValidationError("--keepalive-seconds must be above 0") }
    }

    /// How this gateway connects to `service`: as a CURVE client with its own pair (nil: plaintext).
    public func credentials(for service: ServiceName) -> CurveCredentials? {
        guard let keys, let certificate, let serverKey = try? keys.servicePublicKey(service.rawValue) else { return nil }
        return CurveCredentials(publicKey: certificate.publicKey, secretKey: certificate.secretKey ?? "", serverKey: serverKey)
    }

    static func hostAndPort(_ text: String, flag: String) throws -> (String, Int) {
        let invalid = ValidationError("--\(flag): \"\(text)\" is not host:port (127.0.0.1:7380, [::1]:7380, 0.0.0.0:443)")
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { throw invalid }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        guard !host.isEmpty else { throw invalid }
        return (host, port)
    }

    /// The web app's folder: `Services/HTTPGateway/Web` above the executable (a build) or the working directory.
    static func findWebDirectory(from starts: [String]) -> String? {
        for start in starts {
            var url = URL(fileURLWithPath: start).standardizedFileURL
            for _ in 0..<8 {
                let candidate = url.appendingPathComponent("Services/HTTPGateway/Web")
                if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("index.html").path) { return candidate.path }
                url = url.deletingLastPathComponent()
            }
        }
        return nil
    }
}

extension MetricsAddress {
    /// PROTOCOL's default for the gateway, 127.0.0.1:7389; `off` serves none.
    static func gateway(_ given: String?) throws -> MetricsAddress {
        try MetricsAddress(given ?? "127.0.0.1:7389", service: .sessionLogger).withExplicit(given != nil)
    }

    private func withExplicit(_ explicit: Bool) -> MetricsAddress {
        if case .http(let host, let port, _) = self { return .http(host: host, port: port, explicit: explicit) }
        return self
    }
}
