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
}
