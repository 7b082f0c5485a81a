import Foundation

/// The least a log that syncs every record can write to storage: records of `recordBytes` appended
/// to a file and `fdatasync`ed one at a time, `rate` a second, as a service's log is under a steady
/// load of one record a commit. `write_bytes` is counted by page: each sync writes the whole 4 KB
/// page its record lies in, however little of it is new.
enum SyncFloor {
    /// Bytes written to storage per record, measured on this thread (`/proc/thread-self/io`).
    static func bytesPerRecord(recordBytes: Int, rate: Double, seconds: Double) throws -> Double {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lht-sync-floor-\(getpid())").path
        let count = Int(rate * seconds)
        let before = ProcessStatus.bytesWritten(of: "thread-self")
        try appendAndSync(path: path, recordBytes: recordBytes, rate: rate, from: DispatchTime.now().uptimeNanoseconds,
                          while: { $0 < count }, synced: { _, _ in })
        return (ProcessStatus.bytesWritten(of: "thread-self") - before) / Double(count)
    }

    /// Appends a record of `recordBytes` to a new file at `path` and `fdatasync`s it, one every
    /// 1/`rate` s from `start`, while `goOn(records so far)`; `synced(due, done)` after each, in
    /// uptime nanoseconds. The file is removed at the end.
    static func appendAndSync(path: String, recordBytes: Int, rate: Double, from start: UInt64, while goOn: (Int) -> Bool,
                              synced: (_ due: UInt64, _ done: UInt64) -> Void) throws {
        let descriptor = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer {
            close(descriptor)
            unlink(path)
        }
        let record = [UInt8](repeating: UInt8(ascii: "x"), count: recordBytes)
        let interval = UInt64(1e9 / rate)
        var count = 0
        while goOn(count) {
            let due = start + UInt64(count) * interval, now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }  // a paced writer: one record when due
            guard write(descriptor, record, record.count) == record.count, fdatasync(descriptor) == 0 else { throw CocoaError(.fileWriteUnknown) }
            synced(due, DispatchTime.now().uptimeNanoseconds)
            count += 1
        }
    }
}

/// The disk's own sync latency beside a soak: a thread of its own appends a record of the logger's
/// size to a file in the soak's directory and `fdatasync`s it (`SyncFloor.appendAndSync`), 100
/// times a second, and keeps each one's time (ms) by the soak's window, from when it was due, as the
/// soak times a request from when it was sent: a sync that hangs for 250 ms delays the 25 due
/// meanwhile, as it holds every ack that waits for it (timed from its own start, it would count
/// once). A service whose ack waits for a sync cannot answer faster than the disk syncs, so a window
/// in which this probe misses the soak's target is one no design that syncs each ack (Redis with
/// `appendfsync always` included) could meet.
final class SyncProbe: @unchecked Sendable {
    /// A logged session's record: about the size of its row in the logger's log.
    static let recordBytes = 700
    /// Often enough for a p99 of every 30 s window (3,000 syncs), seldom enough to add little to the disk's load.
    static let rate = 100.0
    private let lock = NSLock()
    private var latencies: WindowedLatencies  // under `lock`
    private var stopping = false       // under `lock`
    private let finished = DispatchSemaphore(value: 0)

    init(directory: URL, windows: Int, windowSeconds: Double, begin: UInt64) {
        latencies = WindowedLatencies(windows: windows, windowSeconds: windowSeconds, begin: begin)
        let path = directory.appendingPathComponent("sync-probe").path
        let thread = Thread { [self] in
            defer { finished.signal() }
            // A write that fails ends the probe: its windows from then on stay empty.
            try? SyncFloor.appendAndSync(path: path, recordBytes: Self.recordBytes, rate: Self.rate, from: begin,
                                         while: { _ in !lock.withLock { stopping } }) { due, done in
                lock.withLock { latencies.record(due: due, done: done) }
            }
        }
        thread.name = "sync-probe"
        thread.start()
    }

    /// Ends the probe; its latencies by window.
    func stop() -> [[Double]] {
        lock.withLock { stopping = true }
        finished.wait()
        return lock.withLock { latencies.byWindow }
    }
}

/// A probe's latencies (ms, from when each was due to when it was done) by the soak's window of when
/// it was due, as the soak counts a request in the window it was sent in.
struct WindowedLatencies {
    private(set) var byWindow: [[Double]]
    private let windowSeconds: Double
    private let begin: UInt64

    init(windows: Int, windowSeconds: Double, begin: UInt64) {
        byWindow = Array(repeating: [], count: windows)
        self.windowSeconds = windowSeconds
        self.begin = begin
    }

    mutating func record(due: UInt64, done: UInt64) {
        byWindow[min(byWindow.count - 1, Int(Double(due - begin) / 1e9 / windowSeconds))].append(Double(done - due) / 1_000_000)
    }
}
