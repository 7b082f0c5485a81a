import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import NoAlcStreak
import Notifier
import ReminderPlanner
import ServiceHost
import SessionLogger
import TestSupport
import ZeroMQ

/// One test's services, each built in-process from its Settings (parsed from the same flags the
/// executable takes) on its own thread: one shared context, one transport, one scratch directory
/// with a data directory per service. Stops everything, downstream first, when it goes away.
public final class ServiceRig {
    public let context: Context
    public let transport: Transport
    public let scratch = ScratchDirectory("lht-service-tests")
    /// The rig's own PostgreSQL server, for `Backend.postgresql`.
    public let postgres: TestPostgres?
    private var started: [InProcessService] = []

    public init(_ transport: Transport = .tcp, backend: Backend = .sqlite) throws {
        context = try Context()
        self.transport = transport
        postgres = backend == .postgresql ? try TestPostgres() : nil
    }

    deinit {
        stopAll()
        postgres?.stop()
    }

    public func stopAll() {
        for service in started.reversed() { service.stop() }
        started.removeAll()
    }

    /// The flags every service gets: its endpoints, and its data directory or the rig's database.
    private func common(_ name: ServiceName, dataDirectory: String? = nil) -> [String] {
        transport.bindArguments(name) + storageArguments(name, dataDirectory: dataDirectory)
    }

    private func storageArguments(_ name: ServiceName, dataDirectory: String?) -> [String] {
        ["--data-dir", dataDirectory ?? scratch.subdirectory(name.rawValue).path]
            + (postgres.map { Self.onPostgreSQL.contains(name) ? ["--database", $0.url] : [] } ?? [])
    }

    /// The services whose stores are written for PostgreSQL too; the others keep SQLite in a
    /// PostgreSQL rig.
    public static let onPostgreSQL: Set<ServiceName> = [.sessionLogger, .reminderPlanner, .notifier, .noalcStreak]

    private func start(_ build: @escaping @Sendable (Context) throws -> any Service) throws -> InProcessService {
        let service = try startService(context: context, build)
        started.append(service)
        return service
    }

    public func sessionLogger(dataDirectory: String? = nil) throws -> InProcessService {
        let settings = try SessionLoggerSettings(SessionLoggerOptions.parse(common(.sessionLogger, dataDirectory: dataDirectory)))
        return try start { context in try SessionLogger(settings: settings, logger: quietLogger("session-logger"), context: context) }
    }

    /// The session logger again, after `previous` stopped: its data directory and its endpoints, so
    /// followers reconnect to it (TCP ports are bound again).
    public func sessionLogger(restarting previous: InProcessService, dataDirectory: String? = nil) throws -> InProcessService {
        let arguments = ServiceName.sessionLogger.roles.flatMap { ["--\($0.rawValue)", previous.endpoints[$0.rawValue]!] }
            + storageArguments(.sessionLogger, dataDirectory: dataDirectory)
        let settings = try SessionLoggerSettings(SessionLoggerOptions.parse(arguments))
        return try start { context in try SessionLogger(settings: settings, logger: quietLogger("session-logger"), context: context) }
    }

    /// A planner on a manual clock starting at `clock` (nil: on the system clock), following `logger`.
    public func planner(clock: Instant?, following logger: InProcessService, extra: [String] = []) throws -> InProcessService {
        let settings = try PlannerSettings(PlannerOptions.parse(common(.reminderPlanner) + (clock.map { ["--clock", "manual:\($0)"] } ?? []) + [
            "--\(ServiceName.sessionLogger.flag(.api))", logger.api, "--\(ServiceName.sessionLogger.flag(.events))", logger.events,
        ] + extra))
        return try start { context in try ReminderPlanner(settings: settings, logger: quietLogger("reminder-planner"), context: context) }
    }

    /// A notifier following `planner`, logging quick actions at `logger`.
    public func notifier(following planner: InProcessService, logger: InProcessService, extra: [String] = []) throws -> InProcessService {
        let settings = try NotifierSettings(NotifierOptions.parse(common(.notifier) + [
            "--\(ServiceName.reminderPlanner.flag(.api))", planner.api, "--\(ServiceName.reminderPlanner.flag(.events))", planner.events,
            "--\(ServiceName.sessionLogger.flag(.api))", logger.api,
        ] + extra))
        return try start { context in try NotifierService(settings: settings, logger: quietLogger("notifier"), context: context) }
    }

    /// A streak service following the session logger at `loggerAPI` / `loggerEvents` (the events
    /// may come from elsewhere: a test relay that drops some).
    public func streak(loggerAPI: String, loggerEvents: String, extra: [String] = []) throws -> InProcessService {
        let settings = try NoAlcStreakSettings(NoAlcStreakOptions.parse(common(.noalcStreak) + [
            "--\(ServiceName.sessionLogger.flag(.api))", loggerAPI, "--\(ServiceName.sessionLogger.flag(.events))", loggerEvents,
        ] + extra))
        return try start { context in try NoAlcStreakService(settings: settings, logger: quietLogger("noalc-streak"), context: context) }
    }

    public func streak(following logger: InProcessService) throws -> InProcessService {
        try streak(loggerAPI: logger.api, loggerEvents: logger.events)
    }

    public func client(_ service: InProcessService) -> TestClient { TestClient(context: context, service) }

    public func recorder(_ service: InProcessService, prefixes: [String] = [""]) throws -> EventRecorder {
        try EventRecorder(context: context, service, prefixes: prefixes)
    }

    /// Waits until the instances' `health.owns` add up to every partition, each with a share (a
    /// lone instance: all of them).
    public func waitUntilSharing(_ instances: [InProcessService], timeout: Double) throws {
        try waitUntil(timeout: timeout, interval: 0.2, "\(instances.count) instance(s) sharing every partition") {
            let shares = try instances.map { try client($0).call(Ops.health, NoFields()).owns?.partitions ?? 0 }
            return shares.allSatisfy { $0 > 0 } && shares.reduce(0, +) == Ownership.partitionCount
        }
    }

    /// A socket the test owns (a relay, a raw subscriber), on the rig's context.
    public func socket(_ type: SocketType) throws -> Socket { try Socket(context, type) }

    /// A fresh endpoint for a test-owned socket to bind.
    public func endpoint(_ label: String) -> String {
        switch transport {
        case .tcp: "tcp://127.0.0.1:*"
        case .inproc: "inproc://\(label)-\(UUID().uuidString.prefix(8))"
        }
    }
}

/// Where the services under test store: the embedded default, or the rig's own PostgreSQL server
/// (PROTOCOL "Cluster (PostgreSQL)"), which the services whose stores are written for it use.
public enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgresql
    public var description: String { rawValue }
}

/// Typed values for the tests' requests.
public func user(_ text: String) -> UserID { UserID(text)! }
public func day(_ text: String) -> LocalDay { LocalDay(text)! }

extension Instant {
    /// This instant with seconds and milliseconds dropped, so a reminder time (hh:mm) lands on it exactly.
    public var minuteFloor: Instant { Instant(millisecondsSince1970: millisecondsSince1970 - millisecondsSince1970 % 60_000) }

    /// The UTC wall time of this instant, as a reminder's `time`.
    public var utcTime: LocalTime {
        let minute = local(in: ZoneID.utc).minuteOfDay
        return LocalTime(hour: minute / 60, minute: minute % 60)!
    }
}
