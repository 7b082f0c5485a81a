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

/// The disk's own sync latency beside a soak: a thread of its own appends a record of the logger's
/// size to a file in the soak's directory and `fdatasync`s it, `rate` times a second, and keeps each
/// one's time (ms) by the soak's window, from when it was due, as the soak times a request from when
/// it was sent: a sync that hangs for 250 ms delays the 25 due meanwhile, as it holds every ack that
/// waits for it (timed from its own start, it would count once). A service whose ack waits for a
/// sync cannot answer faster than the disk syncs, so a window in which this probe's own p99 is over
/// 10 ms is one no design that syncs each ack (Redis with `appendfsync always` included) could meet.
final class SyncProbe: @unchecked Sendable {
    /// A logged session's record: its row in the logger's log (689 B in #30's measurement).
    static let loggerRecordBytes = 700
    /// Often enough for a p99 of every 30 s window (3,000 syncs), seldom enough to add little to the disk's load.
    static let rate = 100.0
    private let lock = NSLock()
    private var latencies: [[Double]]  // under `lock`
    private var stopping = false       // under `lock`
    private let finished = DispatchSemaphore(value: 0)

    init(directory: URL, recordBytes: Int, rate: Double, windows: Int, windowSeconds: Double, begin: UInt64) throws {
        latencies = Array(repeating: [], count: windows)
        let path = directory.appendingPathComponent("sync-probe").path
        let descriptor = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
        let record = [UInt8](repeating: UInt8(ascii: "x"), count: recordBytes)
        let interval = UInt64(1e9 / rate)
        let thread = Thread { [self] in
            defer {
                close(descriptor)
                unlink(path)
                finished.signal()
            }
            var due = begin
            while !lock.withLock({ stopping }) {
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
                guard write(descriptor, record, record.count) == record.count, fdatasync(descriptor) == 0 else { return }
                let ended = DispatchTime.now().uptimeNanoseconds
                let window = min(windows - 1, Int(Double(due - begin) / 1e9 / windowSeconds))
                lock.withLock { latencies[window].append(Double(ended - due) / 1_000_000) }
                due += interval
            }
        }
        thread.name = "sync-probe"
        thread.start()
    }

    /// Ends the probe; its latencies by window.
    func stop() -> [[Double]] {
        lock.withLock { stopping = true }
        finished.wait()
        return lock.withLock { latencies }
    }
}
