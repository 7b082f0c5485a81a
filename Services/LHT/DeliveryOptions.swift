import ArgumentParser
import Foundation

/// Where `lht subscribe` hands each event on (ntfy's subscriber: a command, the desktop, an ntfy topic),
/// and the cursor that makes a restarted subscriber deliver what it missed, once.
struct DeliveryOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Run this command (via /bin/sh -c) per notification, its fields in LHT_TITLE, LHT_BODY, "
        + "LHT_ACTIVITY, LHT_NOTIFICATION_ID, LHT_USER_ID, LHT_CATEGORY, LHT_DEEP_LINK, LHT_TARGET_DAY, LHT_SCHEDULED_FOR, "
        + "LHT_ACTIONS (action ids) and LHT_EVENT (the event JSON); exit status 0 is delivered.", valueName: "command"))
    var exec: String?

    @Flag(help: "Show each notification on the desktop with notify-send (needs DISPLAY, WAYLAND_DISPLAY or DBUS_SESSION_BUS_ADDRESS).")
    var desktop = false

    @Option(help: ArgumentHelp("Publish each notification to this ntfy topic, e.g. https://ntfy.sh/my-lht (JSON publish; "
        + "env LHT_NTFY_TOKEN: an access token).", valueName: "url"))
    var ntfy: String?

    @Option(name: .customLong("ntfy-priority"), help: ArgumentHelp("ntfy priority: 1-5 or min, low, default, high, max.", valueName: "priority"))
    var ntfyPriority = "default"

    @Option(help: ArgumentHelp("The file that keeps the last delivered seq per publisher (default with --exec, --desktop or --ntfy: "
        + "~/.local/state/lht/subscribe-<user>-<target>.cursor, or under $XDG_STATE_HOME; mode 0600). On start, what was missed "
        + "after it is delivered first.",
        valueName: "file"))
    var cursor: String?

    init() {}

    func validate() throws {
        let targets = [exec != nil, desktop, ntfy != nil].filter { $0 }.count
        guard targets <= 1 else {
            throw ValidationError("give one of --exec, --desktop and --ntfy (each keeps its own cursor: run one subscriber per target)")
        }
        if exec?.isEmpty == true { throw ValidationError("--exec: the command is empty") }
        if desktop {
            guard ["DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"].contains(where: { !(environment[$0] ?? "").isEmpty }) else {
                throw ValidationError("--desktop needs a desktop session (DISPLAY, WAYLAND_DISPLAY or DBUS_SESSION_BUS_ADDRESS); "
                    + "use --exec or --ntfy elsewhere")
            }
            guard findExecutable("notify-send") != nil else {
                throw ValidationError("--desktop needs notify-send on PATH (Debian: apt-get install libnotify-bin)")
            }
        }
        if let ntfy { _ = try NtfyTopic(ntfy) }
        if NtfyTopic.priority(ntfyPriority) == nil {
            throw ValidationError("--ntfy-priority: \"\(ntfyPriority)\" is not 1-5, min, low, default, high or max")
        }
        if cursor?.isEmpty == true { throw ValidationError("--cursor: the path is empty") }
    }

    /// The target asked for; nil: print lines on standard output (as without these flags).
    func target() throws -> DeliveryTarget? {
        if let exec { return CommandTarget(command: exec) }
        if desktop { return DesktopTarget(notifySend: findExecutable("notify-send")!) }
        if let ntfy { return NtfyTarget(topic: try NtfyTopic(ntfy), priority: NtfyTopic.priority(ntfyPriority)!) }
        return nil
    }

    /// What names the target in the default cursor's file name.
    private var targetKey: String? {
        if let exec { return "exec-" + fnv1a(exec) }
        if desktop { return "desktop" }
        if let ntfy { return "ntfy-" + fnv1a(ntfy) }
        return nil
    }

    /// `--cursor`, else the default for a delivery target (`who` names the user or the prefixes); nil: no cursor.
    func cursorURL(who: String) -> URL? {
        if let cursor { return URL(fileURLWithPath: cursor) }
        guard let targetKey else { return nil }
        let state = environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state")
        let safe = String(who.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." ? $0 : "_" }.prefix(80))
        return state.appendingPathComponent("lht").appendingPathComponent("subscribe-\(safe)-\(targetKey).cursor")
    }
}

/// 64-bit FNV-1a as 16 hex digits: a short stable name for a command or a URL in a file name.
func fnv1a(_ text: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x100_0000_01b3
    }
    let hex = String(hash, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}

/// The first `name` in PATH that is an executable file.
func findExecutable(_ name: String) -> String? {
    for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
        let path = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}
