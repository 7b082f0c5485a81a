import Foundation
import LHTClient
import LHTSchema
import Spawn

/// Why a hand-over failed: worth retrying (the target is down, busy or failed this once) or not (it refused).
struct DeliveryError: Error, CustomStringConvertible {
    let description: String
    let retry: Bool
}

protocol DeliveryTarget {
    /// How lines name it: "ntfy https://ntfy.sh/my-lht".
    var name: String { get }
    /// Whether it takes this event; others are passed over (and the cursor moves past them).
    func accepts(_ event: ReceivedEvent) -> Bool
    /// Hands one event over; returns only once the target has it.
    func deliver(_ event: ReceivedEvent) throws(DeliveryError)
}

extension DeliveryTarget {
    func accepts(_ event: ReceivedEvent) -> Bool {
        if case .notify = event.data { return true }
        return false
    }
}

/// The event envelope as one line of JSON (what `lht subscribe` prints under "event").
func envelopeJSON(_ event: ReceivedEvent) -> String {
    (try? WireJSON.encode(event)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
}

/// `--exec`: `/bin/sh -c <command>` per event, the notification's fields in LHT_* variables.
struct CommandTarget: DeliveryTarget {
    let command: String
    var name: String { "command" }

    /// Every matching event: a command can read any of them from LHT_EVENT (LHT_TYPE, LHT_TOPIC and LHT_SEQ too).
    func accepts(_ event: ReceivedEvent) -> Bool { true }

    static func variables(_ event: ReceivedEvent) -> [String: String] {
        var variables = ["LHT_EVENT": envelopeJSON(event), "LHT_TYPE": event.type, "LHT_TOPIC": event.topic, "LHT_SEQ": String(event.seq)]
        if case .notify(let notification) = event.data {
            variables["LHT_TITLE"] = notification.title
            variables["LHT_BODY"] = notification.body
            variables["LHT_ACTIVITY"] = notification.activity.rawValue
            variables["LHT_NOTIFICATION_ID"] = notification.notificationId
            variables["LHT_USER_ID"] = notification.userId.description
            variables["LHT_CATEGORY"] = notification.category
            variables["LHT_DEEP_LINK"] = notification.deepLink
            variables["LHT_TARGET_DAY"] = notification.targetDay?.description ?? ""
            variables["LHT_SCHEDULED_FOR"] = notification.scheduledFor.description
            variables["LHT_ACTIONS"] = notification.actions.map(\.id).joined(separator: " ")
        }
        return variables
    }

    func deliver(_ event: ReceivedEvent) throws(DeliveryError) {
        try runToEnd("/bin/sh", ["-c", command], extra: Self.variables(event), what: "the command")
    }
}

/// `--desktop`: notify-send with the title and body, app name "lht".
struct DesktopTarget: DeliveryTarget {
    let notifySend: String
    var name: String { "notify-send" }

    func deliver(_ event: ReceivedEvent) throws(DeliveryError) {
        guard case .notify(let notification) = event.data else { return }
        try runToEnd(notifySend, ["--app-name=lht", "--", notification.title, notification.body], extra: [:], what: "notify-send")
    }
}

/// Runs a program with standard output and error inherited; exit status 0 is success, anything else worth a retry.
/// In a process group of its own: a ^C stops the subscriber between hand-overs, not the command in the middle of one.
private func runToEnd(_ executable: String, _ arguments: [String], extra: [String: String], what: String) throws(DeliveryError) {
    let process: ChildProcess
    do {
        process = try ChildProcess(executable, arguments, environment: ProcessInfo.processInfo.environment.merging(extra) { $1 },
                                   ownProcessGroup: true)
    } catch {
        throw DeliveryError(description: "\(what) could not be started: \(error)", retry: true)
    }
    switch process.wait() {
    case .exited(0): return
    case .exited(let code): throw DeliveryError(description: "\(what) exited with \(code)", retry: true)
    case .signalled(let signal): throw DeliveryError(description: "\(what) was killed by signal \(signal)", retry: true)
    }
}
