import DequeModule
import Foundation
import Logging
import Storage
import ZeroMQ

/// Makes commits durable without the loop waiting on the disk.
///
/// The connection commits with `synchronous = NORMAL`: SQLite writes a transaction's frames to the
/// write-ahead log and returns without syncing it. The commit is on disk once the log file is
/// synced, and a sync covers every write made to the file before it, whoever made it. While the
/// loop runs, a thread of this class's own does those syncs, and whatever depends on a commit — a
/// reply, a published event — waits in `afterDurable` for the sync that covers it. So an ack still
/// means "on disk" exactly as with `synchronous = FULL`; a `kill -9` loses nothing acked, since the
/// kernel holds the written frames; and the loop decodes and stores the next batch, and answers
/// `health`, while the disk syncs the last one. (With FULL the loop waited for every sync:
/// docs/decisions/0014-syncs-and-checkpoints-off-the-loop.md.)
///
/// A log that is a file of its own (`EventFileStore`) is written without a sync the same way, and
/// synced here the same way.
///
/// Outside `run` (start-up, tests calling `write`) a commit is synced before `write` returns.
/// A sync that fails cannot be retried (the kernel may have dropped the pages it could not write),
/// and readers have seen the commit already: the process exits, and the log is recovered from the
/// file when it starts again.
public final class CommitSync: Durability {
    /// Synced on the loop's thread outside `run`, on the syncer's while it runs: never both at once.
    private let file: SyncedFile
    private let logger: Logger
    /// Commits so far that asked for a sync; the loop's side.
    private(set) var committed: UInt64 = 0
    /// What waits for a sync, in commit order: each action with the commit it waits for.
    private var waiting = Deque<(commit: UInt64, action: () -> Void)>()
    private var syncer: Syncer?
    /// Given when the syncer made more commits durable (the loop polls it).
    public private(set) var wake: WakeSignal?
    /// Runs on the syncer thread before each sync: tests hold the disk back with it.
    public var beforeSync: (@Sendable () -> Void)?

    init(databasePath: String, logger: Logger) {
        file = LogFile(databasePath: databasePath)
        self.logger = logger
    }

    /// For a log that is a file of its own: syncing it makes every commit durable.
    init(eventFile: EventFile, logger: Logger) {
        file = eventFile
        self.logger = logger
    }

    /// Commits made durable so far.
    private var durable: UInt64 { syncer?.durable ?? committed }

    /// A transaction committed: syncs it now, or asks the syncer thread to while it runs.
    func didCommit() {
        committed += 1
        if let syncer {
            syncer.request(committed)
        } else {
            file.syncOrExit(logger)
        }
    }

    /// Runs `action` once every commit made so far is on disk: at once when they are.
    public func afterDurable(_ action: @escaping () -> Void) {
        if waiting.isEmpty && durable >= committed {
            action()
        } else {
            waiting.append((committed, action))
        }
    }

    /// Runs the actions whose commits are on disk now, in order. Loop thread.
    public func runDurable() {
        let durable = durable
        while let first = waiting.first, first.commit <= durable {
            waiting.removeFirst()
            first.action()
        }
    }

    /// From here on commits are synced on a thread of their own (`run`).
    public func startThread() throws {
        let wake = try WakeSignal()
        self.wake = wake
        syncer = Syncer(file: file, wake: wake, durable: committed, beforeSync: beforeSync, logger: logger)
    }

    /// Syncs what is left, ends the thread, runs every waiting action, and syncs inline again.
    public func stopThread() {
        syncer?.stop()
        runDurable()
        syncer = nil
        wake = nil
    }

    /// The thread that syncs: waits for a request, syncs everything written so far, reports it.
    private final class Syncer: @unchecked Sendable {
        // Shared with the loop thread, under `condition`.
        private let condition = NSCondition()
        private var requested: UInt64
        private var synced: UInt64
        private var stopping = false
        private let finished = DispatchGroup()

        init(file: SyncedFile, wake: WakeSignal, durable: UInt64, beforeSync: (@Sendable () -> Void)?, logger: Logger) {
            requested = durable
            synced = durable
            finished.enter()
            let thread = Thread { [self] in
                defer { finished.leave() }
                serve(file, wake, beforeSync, logger)
            }
            thread.name = "commit-sync"
            thread.start()
        }

        var durable: UInt64 { condition.withLock { synced } }

        func request(_ commit: UInt64) {
            condition.withLock {
                requested = commit
                condition.signal()
            }
        }

        func stop() {
            condition.withLock {
                stopping = true
                condition.signal()
            }
            finished.wait()
        }

        private func serve(_ file: SyncedFile, _ wake: WakeSignal, _ beforeSync: (@Sendable () -> Void)?, _ logger: Logger) {
            condition.lock()
            while true {
                while requested == synced && !stopping { condition.wait() }
                if requested == synced { break }
                // One sync covers every commit requested so far, however many arrived meanwhile.
                let target = requested
                condition.unlock()
                beforeSync?()
                file.syncOrExit(logger)
                condition.lock()
                synced = target
                wake.signal()
            }
            condition.unlock()
        }
    }

    /// The WAL file, reopened when SQLite made a new one (a sync of a removed file would sync nothing).
    private final class LogFile: SyncedFile, @unchecked Sendable {
        let walPath: String
        let databasePath: String
        private var descriptor: Int32 = -1

        init(databasePath: String) {
            self.databasePath = databasePath
            walPath = databasePath + "-wal"
        }

        deinit { if descriptor >= 0 { close(descriptor) } }

        var path: String { walPath }

        func sync() -> String? {
            var open = stat(), current = stat()
            if descriptor >= 0, fstat(descriptor, &open) == 0, stat(walPath, &current) == 0,
               open.st_ino == current.st_ino, open.st_dev == current.st_dev {
                return fdatasync(descriptor) == 0 ? nil : "fdatasync: \(String(cString: strerror(errno)))"
            }
            if descriptor >= 0 { close(descriptor) }
            descriptor = Foundation.open(walPath, O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 { return fdatasync(descriptor) == 0 ? nil : "fdatasync: \(String(cString: strerror(errno)))" }
            // No log file: nothing is in one, so the database file holds every commit.
            let database = Foundation.open(databasePath, O_RDONLY | O_CLOEXEC)
            guard database >= 0 else { return "open: \(String(cString: strerror(errno)))" }
            defer { close(database) }
            return fdatasync(database) == 0 ? nil : "fdatasync: \(String(cString: strerror(errno)))"
        }
    }
}

/// A file whose sync makes commits durable.
protocol SyncedFile: AnyObject, Sendable {
    var path: String { get }
    /// nil when synced, else what failed.
    func sync() -> String?
}

extension SyncedFile {
    /// Exits the process when the sync fails (see CommitSync's comment).
    func syncOrExit(_ logger: Logger) {
        guard let failure = sync() else { return }
        logger.critical("syncing the log to disk failed; exiting so that it is recovered from the file",
                        metadata: ["file": "\(path)", "error": "\(failure)"])
        // At once, from whichever thread: `exit` would run teardown while the loop still runs.
        _exit(74)  // EX_IOERR
    }
}
