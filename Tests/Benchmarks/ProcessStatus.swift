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
}
