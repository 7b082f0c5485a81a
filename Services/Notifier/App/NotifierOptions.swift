import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import ServiceHost

/// `notifier` flags (PROTOCOL.md "Running the services").
public struct NotifierOptions: ServiceArguments {
    @OptionGroup public var common: CommonOptions

    @Option(name: .customLong(ServiceName.reminderPlanner.flag(.api)), help: "The reminder planner's api, for catching up with events.since; one per instance, comma-separated.")
    public var plannerAPI: String?

    @Option(name: .customLong(ServiceName.reminderPlanner.flag(.events)), help: "The reminder planner's events, for reminder.due as it is decided; one per instance, comma-separated.")
    public var plannerEvents: String?

    @Option(name: .customLong(ServiceName.sessionLogger.flag(.api)), help: "The session logger's api, where NoAlc quick actions log; one per instance, comma-separated.")
    public var sessionLoggerAPI: String?

    // Unconditional, so `-1` is read as this flag's value and refused by range rather than as an unknown flag.
    @Option(name: .customLong("rate-limit-minutes"), parsing: .unconditional,
            help: "At most one notification per user and activity within this many minutes (0 = off).")
    public var rateLimitMinutes = 60

    public init() {}
}

/// Resolved settings; tests build these directly with wildcard ports and a temp directory.
public struct NotifierSettings: Sendable {
    public let service: ServiceSettings
    public let plannerAPI: [String]
    public let plannerEvents: [String]
    public let sessionLoggerAPI: [String]
    public let rateLimitMinutes: Int

    /// A week: longer is surely a typo, and it keeps minutes × 60 000 far from overflow.
    public static let rateLimitRange = 0...10_080

    public init(_ options: NotifierOptions) throws {
        // Flags without side effects first, so a bad one does not leave a data directory behind.
        guard Self.rateLimitRange.contains(options.rateLimitMinutes) else {
            throw ValidationError("--rate-limit-minutes: \(options.rateLimitMinutes) is not 0...\(Self.rateLimitRange.upperBound)")
        }
        rateLimitMinutes = options.rateLimitMinutes
        plannerAPI = try Endpoint.of(.reminderPlanner, .api, given: options.plannerAPI)
        plannerEvents = try Endpoint.of(.reminderPlanner, .events, given: options.plannerEvents)
        sessionLoggerAPI = try Endpoint.of(.sessionLogger, .api, given: options.sessionLoggerAPI)
        service = try ServiceSettings(.notifier, common: options.common)
    }
}
