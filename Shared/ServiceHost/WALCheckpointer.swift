import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file from a connection and thread of its own,
/// and keeps the log from growing without bound.
///
/// Left to the writer, SQLite checkpoints inside a commit every 1,000 pages: that commit, and the
/// requests waiting behind it, took tens of milliseconds (the p99 of `session.log` acks went from
/// 2 ms to 25 ms). A passive checkpoint here never blocks the writer — but it never lets the log
/// start over either: SQLite rewinds the log only when a write transaction *begins* with every
/// frame already copied back, and under steady load the writer always begins right after its own
/// last commit, before this thread has caught up. So the log grew by a page per commit forever
/// (25 GB in a 30-minute soak). Once it passes `limit`, `rewindRequested` asks the writer to run
/// one passive checkpoint itself before its next transaction: it copies only the few frames this
/// thread has not, and that transaction then rewinds the log (truncated to `limit` by
/// `journal_size_limit`). A TRUNCATE checkpoint from here would wait for a gap in a busy writer.
public final class WALCheckpointer {
    public static let defaultLimit: Int64 = 64 << 20
    private let timer: DispatchSourceTimer
    private let rewind = Flag()

    /// In the last eighth before the limit, a checkpoint every 20 ms: the writer's own checkpoint
    /// before the log rewinds then copies a few milliseconds of its writes. It runs on the service's
    /// loop: copying 200 ms of a clock advance's writes there held `health` for 190 ms. Only near the
    /// limit: each checkpoint rewrites every page it copies and syncs the file (at 1,000 requests/s,
    /// a checkpoint every 20 ms all the time wrote 15 KB per logged record, every 200 ms 9.6 KB; once
    /// a second, 8.1 KB, but its larger syncs stalled a busy writer's commits for up to 480 ms).
    static let nearLimitMilliseconds = 20

    init(path: String, everyMilliseconds interval: Int = 200, limit: Int64 = defaultLimit) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        let pageSize = try database.read { db in try Int64.fetchOne(db, sql: "PRAGMA page_size") } ?? 4096
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "wal-checkpoint", qos: .utility))
        timer.schedule(deadline: .now() + .milliseconds(interval))
        // The handler holds the timer (to reschedule it) until `deinit` cancels it.
        timer.setEventHandler { [rewind] in
            let frames = (try? database.writeWithoutTransaction { db in try db.checkpoint(.passive) })?.walFrameCount ?? 0
            let logBytes = Int64(frames) * pageSize
            if logBytes > limit { rewind.value.store(true, ordering: .relaxed) }
            timer.schedule(deadline: .now() + .milliseconds(logBytes > limit / 8 * 7 ? Self.nearLimitMilliseconds : interval))
        }
        timer.resume()
        self.timer = timer
    }

    /// Called by the writer before a transaction: true once, when it should checkpoint first.
    func takeRewindRequest() -> Bool { rewind.value.exchange(false, ordering: .relaxed) }

    func requestRewind() { rewind.value.store(true, ordering: .relaxed) }

    deinit { timer.cancel() }

    /// Shared between the timer's queue and the writer.
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
}
