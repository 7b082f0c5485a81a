import Foundation

/// What `/proc` tells of other processes.
enum ProcessTable {
    /// Whether `pid` runs: a process that exited but was not reaped yet (PostgreSQL's, whose parent
    /// pg_ctl left it to init, until init gets to it) does not.
    static func running(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        // "pid (comm) S …": the state follows the last ")".
        return stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).first != "Z"
    }

    /// The children of every thread of `pid`.
    static func children(of pid: pid_t) -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap { pid_t($0) }
        }
    }
}
