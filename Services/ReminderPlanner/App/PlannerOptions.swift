import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import ServiceHost
import ZoneRules

/// `reminder-planner` flags (PROTOCOL.md "Running the services").
public struct PlannerOptions: ServiceArguments {
    @OptionGroup public var common: CommonOptions

    @Option(name: .customLong(ServiceName.sessionLogger.flag(.api)), help: "The session logger's api, for catching up with events.since; one per instance, comma-separated.")
    public var sessionLoggerAPI: String?

    @Option(name: .customLong(ServiceName.sessionLogger.flag(.events)), help: "The session logger's events, for sessions as they are logged; one per instance, comma-separated.")
    public var sessionLoggerEvents: String?

    @Option(name: .customLong("time-zone"), help: "Time zone of users who have not set one.")
    public var timeZone = "UTC"

    @Option(name: .customLong("grace-minutes"), help: "How late an occurrence missed while down may still fire.")
    public var graceMinutes = 60

    @Option(help: "system, or manual:<RFC 3339 instant> for a clock moved only by clock.set/clock.advance.")
    public var clock = "system"

    @Option(name: .customLong("tzdata-check-seconds"), help: "How often to look for a tzdata update (1...60).")
    public var tzdataCheckSeconds = TZDataWatch.defaultSeconds

    public init() {}
}

/// Where the planner's "now" comes from.
public enum ClockSetting: Sendable, Equatable {
    case system
    /// Starts at this instant (or where it stood before a restart, if later) and moves only on request.
    case manual(Instant)

    init(_ text: String) throws {
        if text == "system" {
            self = .system
        } else if text.hasPrefix("manual:"), let start = Instant(rfc3339: String(text.dropFirst("manual:".count))) {
            self = .manual(start)
        } else {
            throw ValidationError("--clock: \"\(text)\" is neither system nor manual:<RFC 3339 instant>")
        }
    }
}

public struct PlannerSettings: Sendable {
    public let service: ServiceSettings
    public let sessionLoggerAPI: [String]
    public let sessionLoggerEvents: [String]
    public let defaultZone: ZoneID
    public let graceMinutes: Int
    public let clock: ClockSetting
    public let tzdataCheckSeconds: Int

    public init(_ options: PlannerOptions) throws {
        defaultZone = try ZoneOption.validated(options.timeZone)
        clock = try ClockSetting(options.clock)
        guard (0...10_080).contains(options.graceMinutes) else {
            throw ValidationError("--grace-minutes: \(options.graceMinutes) is not 0...10080")
        }
        graceMinutes = options.graceMinutes
        // An update must be seen within 60 s (PROTOCOL.md "Zone rules (tzdata)").
        guard (1...60).contains(options.tzdataCheckSeconds) else {
            throw ValidationError("--tzdata-check-seconds: \(options.tzdataCheckSeconds) is not 1...60")
        }
        tzdataCheckSeconds = options.tzdataCheckSeconds
        sessionLoggerAPI = try Endpoint.of(.sessionLogger, .api, given: options.sessionLoggerAPI)
        sessionLoggerEvents = try Endpoint.of(.sessionLogger, .events, given: options.sessionLoggerEvents)
        service = try ServiceSettings(.reminderPlanner, common: options.common)
    }
}

/// A clock that stands still until told to move.
final class ManualTime: TimeSource {
    var current: Instant

    init(_ start: Instant) { current = start }

    func now() -> Instant { current }
}
