import ArgumentParser
import Foundation
import LHTSchema

struct ReminderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reminder",
        abstract: "Plan reminders and see what will happen to each occurrence.",
        subcommands: [ReminderAdd.self, ReminderEdit.self, ReminderList.self, ReminderDelete.self, ReminderUpcoming.self,
                      ReminderRestore.self, ReminderTest.self])
}

/// The rule fields `add` and `edit` share.
struct RuleOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Local time HH:mm (default mindfulness 20:00, workout 18:00, noalc 09:00).", valueName: "HH:mm"))
    var time: String?

    @Option(help: ArgumentHelp("Weekdays, e.g. mon,wed, or daily, weekdays, weekend (default daily).", valueName: "days"))
    var days: String?

    @Option(help: ArgumentHelp("Hours before the reminder in which activity cancels it, 1...48 (default 12, noalc 24).", valueName: "hours"))
    var lookback: Int?

    @Option(help: "The notification's own title (default: by activity and locale; \"\" clears it).")
    var title: String?

    @Option(help: "The notification's own body (\"\" clears it).")
    var body: String?

    init() {}

    /// `--days` as the wire's weekday list; an unknown name fails as the service names it (`data.weekdays[2]`).
    func weekdays() throws(Failure) -> [Weekday]? {
        guard let days else { return nil }
        let names: [String] = days.split(separator: ",").flatMap { part -> [String] in
            switch part.trimmingCharacters(in: .whitespaces).lowercased() {
            case "daily", "all": Weekday.allCases.map(\.rawValue)
            case "weekdays": ["mon", "tue", "wed", "thu", "fri"]
            case "weekend", "weekends": ["sat", "sun"]
            case "none": []
            case let name: [name]
            }
        }
        return try wireValue(names, field: "weekdays")
    }

    /// `--time` as the wire's local time.
    func localTime() throws(Failure) -> LocalTime? { try wireValue(time, field: "time") }
}

struct ReminderAdd: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a reminder: it fires at its time unless activity within the look-back window covers it.")

    @Argument(help: "mindfulness, workout or noalc.")
    var activity: String

    @OptionGroup var rule: RuleOptions

    @Option(help: ArgumentHelp("Choose the reminder's id (a UUID; default: a new one made here, so a retry cannot add it twice).", valueName: "uuid"))
    var id: String?

    @Flag(help: "Store it disabled.")
    var disabled = false

    @OptionGroup var options: UserCommandOptions

    func run() throws {
        let request = ReminderPutRequest(
            id: try wireValue(id, field: "id"), userId: try user.userID(), activity: try wireValue(activity, field: "activity"),
            time: try rule.localTime(), weekdays: try rule.weekdays(), lookbackHours: rule.lookback, enabled: disabled ? false : nil,
            title: rule.title.flatMap { $0.isEmpty ? nil : $0 }, body: rule.body.flatMap { $0.isEmpty ? nil : $0 })
        try printPut(Client(connection).call(Ops.reminderPut, request), verb: "added", json: output.json)
    }
}

struct ReminderEdit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Change a reminder: fetches it and stores it again with the changes given.")

    @Argument(help: "The reminder's id.")
    var id: String

    @OptionGroup var rule: RuleOptions

    @Option(help: "Change the activity.")
    var activity: String?

    @Option(help: ArgumentHelp("Enable or disable it: true or false.", valueName: "true|false"))
    var enabled: Bool?

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let client = try Client(connection)
        let current = try client.call(Ops.reminderGet, ReminderIDRequest(id: try wireValue(id, field: "id"))).value
        func text(_ change: String?, _ old: String?) -> String? {
            guard let change else { return old }
            return change.isEmpty ? nil : change
        }
        let request = ReminderPutRequest(
            id: current.id, userId: current.userId, activity: try wireValue(activity, field: "activity") ?? current.activity,
            time: try rule.localTime() ?? current.time, weekdays: try rule.weekdays() ?? current.weekdays,
            lookbackHours: rule.lookback ?? current.lookbackHours, enabled: enabled ?? current.enabled,
            title: text(rule.title, current.title), body: text(rule.body, current.body))
        try printPut(client.call(Ops.reminderPut, request), verb: "changed", json: output.json)
    }
}

private func printPut(_ answer: Answer<ReminderPutReply>, verb: String, json: Bool) {
    for warning in answer.value.warnings ?? [] { warn("warning: \(warning)") }
    json ? emit(answer.rawText) : emit("\(verb) reminder \(answer.value.reminder.id): \(describe(answer.value.reminder))")
}

func describe(_ reminder: Reminder) -> String {
    var text = "\(reminder.activity.rawValue) at \(reminder.time) \(describe(reminder.weekdays)), look-back \(reminder.lookbackHours) h"
    if !reminder.enabled { text += ", disabled" }
    if let title = reminder.title { text += ", title \"\(title)\"" }
    return text
}

func describe(_ weekdays: [Weekday]) -> String {
    switch Set(weekdays) {
    case Set(Weekday.allCases): "daily"
    case [.mon, .tue, .wed, .thu, .fri]: "on weekdays"
    case [.sat, .sun]: "on weekends"
    case []: "on no day"
    default: "on " + weekdays.map(\.rawValue).joined(separator: ",")
    }
}

struct ReminderList: UserScopedCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the user's reminders.")

    @OptionGroup var options: UserCommandOptions

    func run() throws {
        let client = try Client(connection)
        let answer = try client.call(Ops.reminderList, UserRequest(userId: try user.userID()))
        if output.json { return emit(answer.rawText) }
        guard !answer.value.reminders.isEmpty else { return emit("no reminders for \(user.id)") }
        var table = Table("id", "activity", "time", "days", "look-back", "enabled", "title")
        for reminder in answer.value.reminders {
            table.add(reminder.id.description, reminder.activity.rawValue, reminder.time.description,
                      reminder.weekdays.count == 7 ? "daily" : reminder.weekdays.map(\.rawValue).joined(separator: ","),
                      "\(reminder.lookbackHours) h", reminder.enabled ? "yes" : "no", reminder.title ?? "")
        }
        table.lines.forEach(emit)
    }
}

struct ReminderDelete: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a reminder.")

    @Argument(help: "The reminder's id.")
    var id: String

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let answer = try Client(connection).call(Ops.reminderDelete, ReminderIDRequest(id: try wireValue(id, field: "id")))
        output.json ? emit(answer.rawText) : emit("deleted reminder \(answer.value.id)")
    }
}
