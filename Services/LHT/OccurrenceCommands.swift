import ArgumentParser
import Foundation
import LHTSchema

// `lht reminder upcoming`, `restore` and `test`: the occurrences of the reminders.

struct ReminderUpcoming: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "upcoming",
        abstract: "Every occurrence from today on, with its status and why.",
        discussion: """
            STATUS is scheduled or cancelled before the reminder's time, then fired, suppressed, skipped or \
            missed. WHY names the session or NoAlc entry that covers it, "restored" for a covered occurrence \
            the user chose to keep, "paused", or "planner was down".
            """)

    @Option(help: "How many days from today, 1...31.")
    var days = 7

    @Flag(help: "Add each occurrence's identity (<reminderId>@<instant>), as restore takes it.")
    var ids = false

    @OptionGroup var options: UserCommandOptions

    func run() throws {
        let client = try Client(connection)
        let userId = try user.userID()
        let answer = try client.call(Ops.reminderUpcoming, UpcomingRequest(userId: userId, days: days))
        if output.json { return emit(answer.rawText) }
        let occurrences = answer.value.occurrences
        guard !occurrences.isEmpty else { return emit("nothing planned for \(user.id) in the next \(days) days") }
        let restored = restoredOccurrences(occurrences, user: userId, client: client)
        var table = ids ? Table("day", "weekday", "time", "activity", "status", "why", "occurrence")
                        : Table("day", "weekday", "time", "activity", "status", "why")
        for occurrence in occurrences {
            var row = [occurrence.day.description, occurrence.weekday.rawValue, occurrence.localTime.description,
                       occurrence.activity.rawValue, occurrence.status.rawValue,
                       why(occurrence, restored: restored.contains(occurrence.identity))]
            if ids { row.append(occurrence.identity) }
            table.rows.append(row)
        }
        table.lines.forEach(emit)
    }

    private func why(_ occurrence: Occurrence, restored: Bool) -> String {
        let target = occurrence.targetDay.map { " (about \($0))" } ?? ""
        switch occurrence.status {
        case .cancelled, .suppressed: return occurrence.cause.map { "\($0)" + target } ?? "covered" + target
        case .skipped: return "paused"
        case .missed: return "planner was down"
        case .scheduled, .fired:
            if restored { return "restored" }
            return occurrence.targetDay.map { "asks about \($0)" } ?? ""
        }
    }

    /// Scheduled occurrences that activity covers: the planner shows them scheduled only when the user restored them.
    /// Found from the session logger's records; without an answer from it the column just stays empty.
    private func restoredOccurrences(_ occurrences: [Occurrence], user: UserID, client: Client) -> Set<String> {
        let scheduled = occurrences.filter { $0.status == .scheduled }
        guard !scheduled.isEmpty else { return [] }
        var restored: Set<String> = []
        let sessions = scheduled.filter { $0.activity.isSession && $0.windowStart != nil }
        if let first = sessions.map({ $0.windowStart! }).min(), let last = sessions.map(\.at).max() {
            // A session is at most 24 h long, so one starting a day before the earliest window can still reach it.
            let query = SessionListRequest(userId: user, from: first.adding(seconds: -86_400), until: last.adding(seconds: 1))
            if let list = try? client.call(Ops.sessionList, query).value.sessions {
                for occurrence in sessions where list.contains(where: {
                    $0.activity == occurrence.activity && $0.start <= occurrence.at && $0.end >= occurrence.windowStart!
                }) { restored.insert(occurrence.identity) }
            }
        }
        let noalc = scheduled.filter { $0.activity == .noalc && $0.targetDay != nil }
        if let first = noalc.map({ $0.targetDay! }).min(), let last = noalc.map({ $0.targetDay! }).max() {
            let query = DayRangeRequest(userId: user, from: first, until: last)
            if let entries = try? client.call(Ops.noalcList, query).value.entries {
                let days = Set(entries.map(\.day))
                for occurrence in noalc where days.contains(occurrence.targetDay!) { restored.insert(occurrence.identity) }
            }
        }
        return restored
    }
}

struct ReminderRestore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Keep one covered occurrence: it fires even though activity cancelled it.",
        discussion: "Name the occurrence as <reminderId> --at <instant>, or as <reminderId>@<instant> (see upcoming --ids).")

    @Argument(help: "The reminder's id, or an occurrence identity <reminderId>@<instant>.")
    var id: String

    @Option(help: ArgumentHelp("The occurrence's instant (RFC 3339).", valueName: "instant"))
    var at: String?

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    private var parts: (id: String, at: String?) {
        let pieces = id.split(separator: "@", maxSplits: 1).map(String.init)
        return pieces.count == 2 ? (pieces[0], pieces[1]) : (id, at)
    }

    func validate() throws {
        guard let instant = parts.at else { throw ValidationError("--at is required (or name the occurrence as <reminderId>@<instant>)") }
        _ = try parseInstant(instant, option: "--at")
    }

    func run() throws {
        let instant = try parseInstant(parts.at!, option: "--at")
        let request = RestoreRequest(reminderId: try wireValue(parts.id, field: "reminderId"), at: instant)
        let answer = try Client(connection).call(Ops.reminderRestore, request)
        if output.json { return emit(answer.rawText) }
        let occurrence = answer.value
        emit("restored: \(occurrence.activity.rawValue) on \(occurrence.weekday.rawValue) \(occurrence.day) at \(occurrence.localTime) will fire (\(occurrence.identity))")
    }
}

struct ReminderTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test", abstract: "Fire a reminder now as a test notification, whatever its time, coverage or pause.")

    @Argument(help: "The reminder's id.")
    var id: String

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let answer = try Client(connection).call(Ops.reminderTest, ReminderTestRequest(reminderId: try wireValue(id, field: "reminderId")))
        if output.json { return emit(answer.rawText) }
        emit("test reminder fired: \(answer.value.activity.rawValue) at \(answer.value.at) for \(answer.value.userId)")
    }
}
