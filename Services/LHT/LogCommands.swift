import ArgumentParser
import Foundation
import LHTSchema

struct SessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration.group("session", "Log mindfulness and workout sessions.", [SessionLog.self])
}

struct SessionLog: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Log a session with the session logger and wait for its acknowledgement.",
        discussion: """
            Give either --start and --end (RFC 3339, e.g. 2026-11-23T10:00:00+01:00) or --minutes for a \
            session ending now. Retrying with the same --id is safe: the second ack says "duplicate".
            """)

    @Argument(help: "mindfulness or workout.")
    var activity: String

    @Option(help: ArgumentHelp("When it started (RFC 3339).", valueName: "instant"))
    var start: String?

    @Option(help: ArgumentHelp("When it ended (RFC 3339).", valueName: "instant"))
    var end: String?

    @Option(help: "Length in minutes, ending now (instead of --start/--end).")
    var minutes: Int?

    @OptionGroup var record: LogRecordOptions

    @OptionGroup var options: UserCommandOptions

    func validate() throws {
        switch (start, end, minutes) {
        case (.some(let start), .some(let end), nil):
            _ = try parseInstant(start, option: "--start")
            _ = try parseInstant(end, option: "--end")
        case (nil, nil, .some(let minutes)):
            guard (0...1440).contains(minutes) else { throw ValidationError("--minutes: \(minutes) is not 0...1440") }
        default:
            throw ValidationError("give either --start and --end, or --minutes")
        }
    }

    func run() throws {
        let (from, to): (Instant, Instant)
        if let minutes {
            let now = Instant(secondsSince1970: Instant.now().secondsSince1970)
            (from, to) = (now.adding(seconds: -Int64(minutes) * 60), now)
        } else {
            (from, to) = (try parseInstant(start!, option: "--start"), try parseInstant(end!, option: "--end"))
        }
        let request = SessionLogRequest(
            id: try record.recordID(), userId: try user.userID(),
            activity: try wireValue(activity, field: "activity"), start: from, end: to, source: record.source)
        let receipt = try Client(connection).call(Ops.sessionLog, request)
        if output.json { return emit(receipt.rawText) }
        let length = to.milliseconds(since: from) / 60_000
        emit(record.logged(receipt.value) + " \(activity) session \(receipt.value.id) (\(length) min, \(from) – \(to), seq \(receipt.value.seq))")
    }
}

struct NoAlcCommand: ParsableCommand {
    static let configuration = CommandConfiguration.group("noalc", "Log NoAlc check-ins.", [NoAlcLog.self])
}

struct NoAlcLog: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Log how a day went: steady (0–1 drinks), easy (2–5) or wild (6+).",
        discussion: """
            Without --day the day follows the 18:00 rule in the user's time zone (asked from the \
            planner): before 18:00 local time the check-in is about yesterday, from 18:00 on about today. \
            The latest entry for a day wins.
            """)

    @Argument(help: "steady, easy or wild.")
    var level: String

    @Option(help: ArgumentHelp("The day it is about (YYYY-MM-DD).", valueName: "day"))
    var day: String?

    @OptionGroup var record: LogRecordOptions

    /// For tests: "now" for the 18:00 rule.
    @Option(help: .hidden)
    var now: String?

    @OptionGroup var options: UserCommandOptions

    func validate() throws {
        if let day, LocalDay(day) == nil { throw ValidationError("--day: \"\(day)\" is not a day as YYYY-MM-DD") }
        if let now { _ = try parseInstant(now, option: "--now") }
    }

    func run() throws {
        let client = try Client(connection)
        let userId = try user.userID()
        let target: LocalDay
        if let day {
            target = LocalDay(day)!  // checked by validate()
        } else {
            let zone = try userZone(client, user: userId).zone
            target = NoAlcLog.defaultDay(now: try now.map { try parseInstant($0, option: "--now") } ?? .now(), zone: zone)
        }
        let request = NoAlcLogRequest(
            id: try record.recordID(), userId: userId, day: target,
            level: try wireValue(level, field: "level"), source: record.source)
        let receipt = try client.call(Ops.noalcLog, request)
        if output.json { return emit(receipt.rawText) }
        emit(record.logged(receipt.value) + " NoAlc \(level) for \(target) (\(receipt.value.id), seq \(receipt.value.seq))")
    }

    /// The 18:00 rule of SEMANTICS §2, applied to the current local time: before 18:00 a check-in is
    /// about yesterday, from 18:00 on about today.
    static func defaultDay(now: Instant, zone: ZoneID) -> LocalDay {
        let local = now.local(in: zone)
        return local.minuteOfDay < 18 * 60 ? local.day.adding(days: -1) : local.day
    }
}

/// `--id` and `--source`, for a command that logs a record.
struct LogRecordOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Idempotency key (a UUID; default: a new one made here, so a retry cannot log it twice).", valueName: "uuid"))
    var id: String?

    @Option(help: "Where the record comes from (default lht).")
    var source = "lht"

    init() {}

    func recordID() throws(Failure) -> RecordID? { try wireValue(id, field: "id") }

    /// How the receipt reads: without `--id`, a duplicate is this command's own earlier try, answered late.
    func logged(_ receipt: LogReceipt) -> String { receipt.duplicate && id != nil ? "already logged" : "logged" }
}
