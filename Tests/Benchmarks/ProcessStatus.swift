import Foundation

/// Memory figures of a process from `/proc/<pid>/status`, for every benchmark.
enum ProcessStatus {
    /// `field` (`VmRSS`: resident now, `VmHWM`: the peak so far) in MB; NaN where there is none.
    static func megabytes(_ field: String, of pid: String = "self") -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return .nan }
        return kilobytes / 1024
    }

    /// Bytes the process (or `thread-self`) caused to be sent to storage: `write_bytes` in its `io`,
    /// counted when a page turns dirty, so a page rewritten before it reaches the disk counts once.
    static func bytesWritten(of task: String = "self") -> Double {
        guard let io = try? String(contentsOfFile: "/proc/\(task)/io", encoding: .utf8),
              let line = io.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") }),
              let value = Double(line.split(separator: " ").last ?? "") else { return .nan }
        return value
    }

    /// CPU time each of this process's threads has had so far, in seconds, by thread id: from
    /// `/proc/self/task/<tid>/schedstat`, in nanoseconds. (Foundation's thread names do not reach
    /// the kernel here: every thread is `bench` to it.) A thread that ends takes its time with it.
    static func cpuSecondsByThread() -> [String: Double] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var seconds: [String: Double] = [:]
        for task in tasks {
            guard let schedstat = try? String(contentsOfFile: "/proc/self/task/\(task)/schedstat", encoding: .utf8),
                  let nanoseconds = Double(schedstat.split(separator: " ").first ?? "") else { continue }
            seconds[task] = nanoseconds / 1e9
        }
        return seconds
    }
}
