import Foundation

/// The least a log that syncs every record can write to storage: records of `recordBytes` appended
/// to a file and `fdatasync`ed one at a time, `rate` a second, as a service's log is under a steady
/// load of one record a commit. `write_bytes` is counted by page: each sync writes the whole 4 KB
/// page its record lies in, however little of it is new.
enum SyncFloor {
    /// Bytes written to storage per record, measured on this thread (`/proc/thread-self/io`).
    static func bytesPerRecord(recordBytes: Int, rate: Double, seconds: Double) throws -> Double {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lht-sync-floor-\(getpid())").path
        let descriptor = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer {
            close(descriptor)
            unlink(path)
        }
        let record = [UInt8](repeating: UInt8(ascii: "x"), count: recordBytes)
        let count = Int(rate * seconds)
        let interval = UInt64(1e9 / rate)
        let before = ProcessStatus.bytesWritten(of: "thread-self")
        let begin = DispatchTime.now().uptimeNanoseconds
        for n in 0..<count {
            let due = begin + UInt64(n) * interval, now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            guard write(descriptor, record, record.count) == record.count, fdatasync(descriptor) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
        return (ProcessStatus.bytesWritten(of: "thread-self") - before) / Double(count)
    }
}
