import Foundation
import GRDB
import Logging

/// Applies a log's events to its projection on a thread of its own, in seq order (#30: the
/// projection off the loop). The loop hands over each commit's events; the thread writes their
/// rows in one transaction per handful of commits, with the projection's `applied_seq`. A read
/// waits until the rows of every event committed before it are in (`waitUntilApplied`): cheap
/// in-process, since the thread is at most a few commits behind under load.
///
/// The events stay in memory until applied; a `kill -9` loses only that memory, and the next start
/// catches the projection up from the log (`ProjectionFile.catchUp`).
final class ProjectionApplier: @unchecked Sendable {
    /// The loop waits in `enqueue` while this many events are not yet applied, so a projection that
    /// cannot keep up holds the writes back instead of growing memory without bound.
    static let mostBehind = 4096
    /// A read that waits longer than this for the projection fails (`StoreUnavailable`) rather than
    /// holding the loop: the thread is failing to write (a full disk), and retries meanwhile.
    static let longestWait: TimeInterval = 5

    // Shared with the loop thread, under `condition`.
    private let condition = NSCondition()
    private var queue: [PendingEvent] = []
    private var applied: Int64
    private var stopping = false
    private let finished = DispatchGroup()

    init(database: DatabaseQueue, projection: ProjectionFile, appliedSeq: Int64, logger: Logger) {
        applied = appliedSeq
        finished.enter()
        let thread = Thread { [self] in
            defer { finished.leave() }
            serve(database, projection, logger)
        }
        thread.name = "projection"
        thread.start()
    }

    /// Events just committed to the log, in seq order. Loop thread.
    func enqueue(_ events: [PendingEvent]) {
        condition.withLock {
            while queue.count >= Self.mostBehind && !stopping { condition.wait() }
            queue += events
            condition.broadcast()
        }
    }

    /// Returns once every event through `seq` has its rows in the projection. Loop thread.
    func waitUntilApplied(through seq: Int64) throws {
        let deadline = Date(timeIntervalSinceNow: Self.longestWait)
        try condition.withLock {
            while applied < seq {
                guard condition.wait(until: deadline) || applied >= seq else {
                    throw StoreUnavailable(reason: "the projection is \(seq - applied) events behind the log")
                }
            }
        }
    }

    /// Applies what is queued, then ends the thread.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
        finished.wait()
    }

    private func serve(_ database: DatabaseQueue, _ projection: ProjectionFile, _ logger: Logger) {
        var lastFailure: String?
        condition.lock()
        while true {
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty { break }
            let batch = queue
            queue = []
            condition.broadcast()
            condition.unlock()
            var failed = false
            do {
                try database.write { db in
                    let sql = SQLiteStoreConnection(db)
                    for event in batch {
                        if let data = event.data { try projection.apply(seq: event.seq, data, in: sql) } else { try projection.apply(event.envelope, in: sql) }
                    }
                    try projection.applied(through: batch[batch.count - 1].seq, in: db)
                }
                lastFailure = nil
            } catch {
                failed = true
                if lastFailure != "\(error)" {
                    lastFailure = "\(error)"
                    logger.error("applying the log to the projection failed; retrying", metadata: ["error": "\(error)"])
                }
            }
            condition.lock()
            if !failed {
                applied = batch[batch.count - 1].seq
                condition.broadcast()
            } else if stopping {
                break  // the next start catches the projection up from the log
            } else {
                queue = batch + queue
                condition.wait(until: Date(timeIntervalSinceNow: 0.1))
            }
        }
        condition.unlock()
    }
}
