import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import Logging
import ServiceHost
import Storage
import StreakRules
import ZeroMQ
import ZoneRules

/// `noalc-streak` flags (PROTOCOL.md "Running the services").
public struct NoAlcStreakOptions: ServiceArguments {
    @OptionGroup public var common: CommonOptions

    @Option(name: .customLong(ServiceName.sessionLogger.flag(.api)), help: "The session logger's api, asked for missed events; one per instance, comma-separated.")
    public var sessionLoggerAPI: String?

    @Option(name: .customLong(ServiceName.sessionLogger.flag(.events)), help: "The session logger's events PUB; one per instance, comma-separated.")
    public var sessionLoggerEvents: String?

    @Option(help: "Joker rules: seed (default) or classic (the shipped app's arithmetic).")
    public var policy: String?

    @Option(name: .customLong("time-zone"), help: "IANA zone whose today streak.get uses without asOf (default UTC).")
    public var timeZone: String?

    public init() {}
}

/// Resolved settings; tests and benchmarks build these directly.
public struct NoAlcStreakSettings: Sendable {
    public let service: ServiceSettings
    public let sessionLoggerAPI: [String]
    public let sessionLoggerEvents: [String]
    public let policy: StreakPolicy
    public let timeZone: ZoneID

    public init(_ options: NoAlcStreakOptions) throws {
        // Flags without side effects first, so a bad one does not leave a data directory behind.
        let policyName = options.policy ?? StreakPolicy.seed.rawValue
        guard let policy = StreakPolicy(rawValue: policyName) else {
            throw ValidationError("--policy: \"\(policyName.prefix(40))\" is not seed or classic")
        }
        self.policy = policy
        timeZone = try ZoneOption.validated(options.timeZone ?? "UTC")
        sessionLoggerAPI = try Endpoint.of(.sessionLogger, .api, given: options.sessionLoggerAPI)
        sessionLoggerEvents = try Endpoint.of(.sessionLogger, .events, given: options.sessionLoggerEvents)
        service = try ServiceSettings(.noalcStreak, common: options.common)
    }
}

/// Alcohol-free streaks with jokers (SEMANTICS §5–§6), kept from the session logger's `noalc.logged`
/// events: each user's latest level per day, in SQLite and in memory, and `streak.updated` whenever
/// a user's state as of their latest logged day changes.
public final class NoAlcStreakService: Service {
    public let host: ServiceHost
    public let policy: StreakPolicy
    private let zone: ZoneID
    private let histories: Histories
    private var feed: UpstreamFeed!
    /// "Today" follows a tzdata update without a restart.
    private var tzdata = TZDataWatch()

    public init(settings: NoAlcStreakSettings, logger: Logger, context: Context? = nil) throws {
        host = try ServiceHost(settings: settings.service, layout: StreakStore.layout, logger: logger, context: context)
        policy = settings.policy
        zone = settings.timeZone
        let host = host
        var loaded = try host.query { try StreakStore.load(from: $0, policy: settings.policy, host: host) }
        for (user, history) in loaded {
            loaded[user]?.latest = history.lastDay.map { history.streak(of: user, asOf: $0) }
        }
        histories = Histories(loaded, policy: settings.policy)
        feed = try UpstreamFeed(upstream: .sessionLogger, host: host, eventsEndpoints: settings.sessionLoggerEvents,
                                apiEndpoints: settings.sessionLoggerAPI, partitioned: true) { [unowned self] event, tx in
            try apply(event, in: tx)
        }
        // The owner published each change it stored: a user taken over starts from what is stored.
        feed.onTakeOver = { [unowned self] taken in
            let stored = try host.query { try StreakStore.load(from: $0, policy: policy, host: host) }
            histories.takeOver(from: stored, of: taken.contains)
        }
        registerOps()
        // Before the ready line, so a client asking right after start sees everything logged so far.
        // If the session logger does not answer, the loop keeps trying (PROTOCOL "Running the services").
        feed.catchUp(timeoutMilliseconds: 2000)
    }

    public var tzdataVersion: String? { TZData.system.version }

    public func tick() { _ = tzdata.check(logger: host.logger) }

    /// The service's tables as its migrations make them, for tools that measure its storage (`bench streak`).
    public static var sqliteMigrations: [Migration] { StreakStore.sqliteMigrations }

    private func registerOps() {
        // Reads memory only: no transaction to open and commit (the feed's changes are in memory once committed).
        host.handleOutside(Ops.streakGet) { [unowned self] query in
            let asOf = query.day(now: host.time.now(), serviceZone: zone)
            return histories.committedHistory(of: query.userId).streak(of: query.userId, asOf: asOf)
        }
        host.handle(Ops.calendarGet) { [unowned self] query, tx in
            let levels = histories.history(of: query.userId, in: tx).levels(in: query.days)
            guard let days = NoAlcCalendar.month(query.month, levels: levels) else {
                throw WireError.invalid("data.month", "expected a month as YYYY-MM")
            }
            return CalendarReply(days: days.map { CalendarReply.Day(day: $0.day, level: $0.level, color: $0.color) })
        }
    }

    /// One upstream event. Only `noalc.logged` matters here; the feed advances past the rest.
    ///
    /// The instance that owns the user's partition (`UpstreamFeed.isMine`) stores the day and
    /// publishes what changed, so one `streak.updated` goes out per change however many instances
    /// share the database; the others keep the day in memory only, so every instance answers
    /// `streak.get` alike. An entry that changes nothing stored was applied before (a redelivery):
    /// memory then takes the stored level, and a redelivery costs no walk.
    private func apply(_ event: ReceivedEvent, in tx: Transaction) throws {
        guard case .noalcLogged(let entry) = event.data else { return }
        var history = histories.history(of: entry.userId, in: tx)
        guard feed.isMine(entry.userId, seq: event.seq) else {
            // What the owner published is not known here: `latest` is read when this instance takes the user over.
            history.record(entry.level, on: entry.day)
            histories.stage(history, for: entry.userId, in: tx)
            return
        }
        let changed = try StreakStore.record(user: entry.userId, day: entry.day, level: entry.level, seq: event.seq, in: tx.sql)
        if changed {
            history.record(entry.level, on: entry.day)
        } else {
            guard let stored = try StreakStore.level(user: entry.userId, day: entry.day, in: tx.sql),
                  history.levels(in: entry.day...entry.day)[entry.day] != stored else { return }
            history.record(stored, on: entry.day)
        }
        // Event time: as of the user's latest logged day, so replaying the log gives the same events.
        guard let lastDay = history.lastDay else { return }  // cannot happen: a day was just recorded
        let state = history.streak(of: entry.userId, asOf: lastDay)
        if changed && state != history.latest {
            try tx.append(Events.streakUpdated, userId: entry.userId, activity: .noalc, data: state)
        }
        // What was published: here, or by the instance that changed the day.
        history.latest = state
        histories.stage(history, for: entry.userId, in: tx)
    }
}
