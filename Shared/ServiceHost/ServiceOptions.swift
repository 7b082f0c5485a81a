import ArgumentParser
import Foundation
import LHTSchema
import Logging

/// The flags every service takes. Defaults differ per service: each passes its own to `ServiceSettings.init`
/// (`defaultAPI`, `defaultEvents`; the data directory defaults to `./.lht-data/<name>`).
public struct CommonOptions: ParsableArguments {
    @Option(help: "Endpoint the api ROUTER binds (tcp://127.0.0.1:* picks a free port).")
    public var api: String?

    @Option(help: "Endpoint the events PUB binds.")
    public var events: String?

    @Option(name: .customLong("data-dir"), help: "Directory for the SQLite store (default ./.lht-data/<executable>).")
    public var dataDir: String?

    public init() {}

    public static let flagNames = ["api", "events", "data-dir"]
}

/// One service's resolved common settings.
public struct ServiceSettings: Sendable {
    public let name: String
    public let api: String
    public let events: String
    public let dataDirectory: URL

    public init(name: String, common: CommonOptions, defaultAPI: String, defaultEvents: String) throws {
        self.name = name
        api = try Endpoint.validated(common.api ?? defaultAPI, flag: "api")
        events = try Endpoint.validated(common.events ?? defaultEvents, flag: "events")
        dataDirectory = try DataDirectory.prepared(common.dataDir ?? "./.lht-data/\(name)")
    }
}

public enum Endpoint {
    /// Accepts `tcp://host:port` (port may be `*`), `ipc://path` and `inproc://name`.
    public static func validated(_ endpoint: String, flag: String) throws -> String {
        let invalid = ValidationError("--\(flag): \"\(endpoint)\" is not a ZeroMQ endpoint such as tcp://127.0.0.1:7301")
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
}

public enum DataDirectory {
    /// Creates the directory and proves it writable, so a bad `--data-dir` fails before anything is bound.
    public static func prepared(_ path: String) throws -> URL {
        let url = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            let probe = url.appendingPathComponent(".write-probe-\(getpid())")
            try Data().write(to: probe)
            try FileManager.default.removeItem(at: probe)
        } catch {
            throw ValidationError("--data-dir: \(path) is not a writable directory")
        }
        return url
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
    /// `arguments` with a `--flag=value` added for every flag not given but set in the environment.
    public static func withEnvironment(_ arguments: [String], flags: [String], environment: [String: String]) -> [String] {
        var result = arguments
        for flag in flags {
            let given = arguments.contains { $0 == "--\(flag)" || $0.hasPrefix("--\(flag)=") }
            let variable = "LHT_" + flag.uppercased().replacingOccurrences(of: "-", with: "_")
            if !given, let value = environment[variable] { result.append("--\(flag)=\(value)") }
        }
        return result
    }

    /// Parses and validates, or exits: 0 after `--help`, 2 with one line on standard error otherwise.
    public static func parseOrExit<Options: ParsableArguments>(_ type: Options.Type, flags: [String],
                                                                build: (Options) throws -> Void = { _ in }) -> Options {
        let arguments = withEnvironment(Array(CommandLine.arguments.dropFirst()), flags: flags, environment: ProcessInfo.processInfo.environment)
        do {
            let options = try Options.parse(arguments)
            try build(options)
            return options
        } catch {
            if Options.exitCode(for: error) == .success {
                print(Options.fullMessage(for: error))
                exit(0)
            }
            let message = (error as? ValidationError)?.message ?? Options.message(for: error)
            let line = message.split(separator: "\n").first.map(String.init) ?? "invalid arguments"
            FileHandle.standardError.write(Data("error: \(line)\n".utf8))
            exit(2)
        }
    }

    /// Logs go to standard error so that standard output carries only the `ready` line.
    public static func bootstrapLogging() {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment["LHT_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
            return handler
        }
    }

    /// Prints the ready line, flushed, for whoever started the service.
    public static func announce(_ line: String) {
        // FileHandle writes straight to the descriptor: nothing waits in a stdio buffer.
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
