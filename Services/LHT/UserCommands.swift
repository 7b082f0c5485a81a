import ArgumentParser
import Foundation
import LHTSchema

struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration.group("user", "A user's time zone, language and pause.", [UserSet.self, UserShow.self])
}

struct UserSet: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set the user's time zone, notification language or pause (what is not given stays).",
        discussion: "Reminders follow the user's zone; a paused user's occurrences are skipped.")

    @Option(help: ArgumentHelp("IANA time zone, e.g. Europe/Berlin.", valueName: "zone"))
    var zone: String?

    @Option(help: "Notification language: de or en.")
    var locale: String?

    @Option(help: ArgumentHelp("Pause all reminders: true or false.", valueName: "true|false"))
    var paused: Bool?

    @OptionGroup var options: UserCommandOptions

    func validate() throws {
        if zone == nil && locale == nil && paused == nil { throw ValidationError("give at least one of --zone, --locale, --paused") }
    }

    func run() throws {
        let client = try Client(connection)
        let userId = try user.userID()
        let (newZone, newLocale): (ZoneID?, NotificationLocale?) = (try wireValue(zone, field: "timeZone"), try wireValue(locale, field: "locale"))
        let current = try userZone(client, user: userId).settings
        let request = UserPutRequest(userId: userId, timeZone: newZone ?? current.timeZone, locale: newLocale ?? current.locale,
                                     paused: paused ?? current.paused)
        let stored = try client.call(Ops.userPut, request)
        output.json ? emit(stored.rawText) : emit(describe(stored.value))
    }
}

struct UserShow: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show the user's settings (the planner's defaults if never set).")

    @OptionGroup var options: UserCommandOptions

    func run() throws {
        let client = try Client(connection)
        let stored = try client.call(Ops.userGet, UserRequest(userId: try user.userID()))
        output.json ? emit(stored.rawText) : emit(describe(stored.value))
    }
}

func describe(_ user: UserSettings) -> String {
    "user \(user.userId): time zone \(user.timeZone), locale \(user.locale.rawValue), \(user.paused ? "paused" : "not paused")"
}
