import Foundation
import GRDB
import Synchronization

/// Copies the write-ahead log back into the database file from a connection and thread of its own,
/// and keeps the log from growing without bound (docs/decisions/0014-syncs-and-checkpoints-off-the-loop.md).
///
/// Left to the writer, SQLite checkpoints inside a commit, and every request waits behind that
/// commit. A passive checkpoint here never blocks the writer, but it never lets the log start over
/// either: SQLite rewinds the log only when a write transaction *begins* with every frame already
/// copied back, and a busy writer always begins right after its own last commit. So once the log
/// passes `limit`, `takeRewindRequest` tells the writer to pause before its next transaction while
/// `checkpointNow` copies the few frames left here; that transaction then rewinds the log (truncated
/// to `limit` by `journal_size_limit`). The writer's loop answers `health` meanwhile
/// (`SQLiteStore.rewindLog`). A TRUNCATE checkpoint from here would wait for a gap in a busy writer,
/// and then hold it.
public final class WALCheckpointer {
    public static let defaultLimit: Int64 = 64 << 20
    private let timer: DispatchSourceTimer
    private let queue = DispatchQueue(label: "wal-checkpoint", qos: .utility)
    private let database: DatabaseQueue
    private let rewind = Flag()

    /// In the last eighth before the limit, a checkpoint every 20 ms, so the copy before a rewind, which
    /// the writer waits for, is short. Only near the limit: each checkpoint rewrites the pages it copies
    /// and syncs the file (the cadences measured: decision 0014).
    static let nearLimitMilliseconds = 20

    init(path: String, everyMilliseconds interval: Int = 200, limit: Int64 = defaultLimit) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        self.database = database
        let pageSize = try database.read { db in try Int64.fetchOne(db, sql: "PRAGMA page_size") } ?? 4096
        let timer = DispatchSource.makeTimerSource(queue: queue)
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

    /// Copies every frame back on this class's thread, now; for a writer that writes nothing until
    /// it is done. The result says whether every frame was copied.
    func checkpointNow() -> Checkpoint {
        let checkpoint = Checkpoint()
        queue.async { [database] in
            let result = try? database.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            checkpoint.finish(copiedAll: result.map { $0.checkpointedFrameCount == $0.walFrameCount } ?? false)
        }
        return checkpoint
    }

    /// A checkpoint under way on the checkpointer's thread.
    final class Checkpoint: Sendable {
        private enum State: UInt8 { case running, copiedAll, incomplete }
        private let state = Atomic<UInt8>(State.running.rawValue)
        private let done = DispatchSemaphore(value: 0)

        fileprivate func finish(copiedAll: Bool) {
            state.store((copiedAll ? State.copiedAll : .incomplete).rawValue, ordering: .releasing)
            done.signal()
        }

        var isFinished: Bool { state.load(ordering: .acquiring) != State.running.rawValue }
        var copiedAll: Bool { state.load(ordering: .acquiring) == State.copiedAll.rawValue }
        func wait() { done.wait() }
    }

    /// Stops the timer, waits out a checkpoint under way and closes this connection before it returns:
    /// a connection left to `deinit` could still hold the file's lock when another process opens it.
    func close() {
        timer.cancel()
        queue.sync {}
        try? database.close()
    }

    deinit { timer.cancel() }

    /// Shared between the timer's queue and the writer.
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }
}
