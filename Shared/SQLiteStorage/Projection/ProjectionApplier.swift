import DequeModule
import Foundation
import GRDB
import Logging
import Storage
import ZeroMQ

/// Applies a log's events to its projection on a thread of its own, in seq order, so the loop
/// writes the log alone (docs/decisions/0013-session-logger-behind-the-log.md). The loop hands over each commit's events; the thread writes their
/// rows in one transaction per handful of commits, with the projection's `applied_seq`.
///
/// Reads run on that thread too, each at its own point in the log (`ReadsBehindTheLog`): in the
/// transaction that applies the events, right after the rows of the last event before it, so a
/// read sees exactly the writes before it, and neither it nor the loop waits for the other. (A
/// commit at each read's point cost a `pwrite` of the projection's pages per read.) Answers go back to the loop with a wake signal (`startAnswering`), or to a
/// loop that waits for them (`waitForAnswers`).
///
/// The events stay in memory until applied; a `kill -9` loses only that memory, and the next start
/// catches the projection up from the log (`ProjectionFile.catchUp`).
final class ProjectionApplier: ReadsBehindTheLog, @unchecked Sendable {
    /// The loop waits in `enqueue` while this many events and reads are waiting, so a projection
    /// that cannot keep up holds the writes back instead of growing memory without bound.
    static let mostBehind = 4096
    /// A read that waits longer than this for the projection fails (`StoreUnavailable`) rather than
    /// holding its client: the thread is failing to write (a full disk), and retries meanwhile.
    static let longestWait: TimeInterval = 5
    /// Events that make no rows here are passed without a transaction; the file's `applied_seq` is
    /// moved past them once the log is quiet this long, or once this many are passed unrecorded, so
    /// that a start after a `kill -9` replays a bounded tail, and one after a clean stop none.
    static let quietInterval: TimeInterval = 1
    static let mostUnrecorded: Int64 = 10_000

    // Shared with the loop thread, under `condition`.
    private let condition = NSCondition()
    /// Each commit's events as the loop handed them over: kept as its array, not copied event by
    /// event into one (with a retain of each event's strings and data, on the planner's loop:
    /// docs/decisions/0015-planner-decisions-behind-the-log.md).
    private var queue: [[PendingEvent]] = []
    private var queuedEvents = 0
    private var reads = Deque<(read: PointRead, submitted: Date)>()
    private var answers: [() -> Void] = []
    /// Reads submitted whose answers the loop has not run yet.
    private var unanswered = 0
    private var applied: Int64
    /// The `applied_seq` the file holds: `applied` once recorded.
    private var recorded: Int64
    private var stopping = false
    /// Given when answers wait (`startAnswering`); nil while nothing polls for them.
    private var wake: WakeSignal?
    private let finished = DispatchGroup()

    init(database: DatabaseQueue, projection: ProjectionFile, appliedSeq: Int64, logger: Logger) {
        applied = appliedSeq
        recorded = appliedSeq
        finished.enter()
        let thread = Thread { [self] in
            defer { finished.leave() }
            serve(database, projection, logger)
        }
        thread.name = "projection"
        thread.start()
    }

    /// Events just committed to the log, in seq order, with the reads among them. Together, so that
    /// no read's point is passed before it is here. Loop thread.
    func enqueue(_ events: [PendingEvent], reads newReads: [PointRead]) {
        condition.withLock {
            while queuedEvents + reads.count >= Self.mostBehind && !stopping { condition.wait() }
            if !events.isEmpty {
                queue.append(events)  // never empty: the last array's last event is the batch's last
                queuedEvents += events.count
            }
            let now = Date()
            reads += newReads.map { ($0, now) }
            unanswered += newReads.count
            condition.broadcast()
        }
    }

    var answersWake: WakeSignal? { condition.withLock { wake } }

    /// The last seq whose rows are in the projection.
    var appliedSeq: Int64 { condition.withLock { applied } }

    /// The `applied_seq` stored in the projection's file: where the next start catches up from.
    var recordedSeq: Int64 { condition.withLock { recorded } }

    func startAnswering() throws {
        let signal = try WakeSignal()
        condition.withLock { wake = signal }
    }

    func runAnswered() {
        for answer in takeAnswers(waiting: false) { answer() }
    }

    func waitForAnswers() {
        while true {
            let ready = takeAnswers(waiting: true)
            if ready.isEmpty { return }
            ready.forEach { $0() }
        }
    }

    func stopAnswering() {
        waitForAnswers()
        condition.withLock { wake = nil }
    }

    /// The answers that came; with `waiting`, waits for one while any read is unanswered.
    private func takeAnswers(waiting: Bool) -> [() -> Void] {
        condition.withLock {
            while waiting && answers.isEmpty && unanswered > 0 { condition.wait() }
            let ready = answers
            answers = []
            unanswered -= ready.count
            return ready
        }
    }

    /// Returns once every event through `seq` has its rows in the projection. Loop thread.
    func waitUntilApplied(through seq: Int64) throws {
        let deadline = Date(timeIntervalSinceNow: Self.longestWait)
        try condition.withLock {
            while applied < seq {
                guard condition.wait(until: deadline) || applied >= seq else {
                    throw StoreUnavailable(reason: "the projection is \(seq - applied) events behind the log", label: StoreUnavailable.Cause.projectionBehind)
                }
            }
        }
    }

    /// Applies what is queued and answers every read, then ends the thread.
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
            while queue.isEmpty && !readIsDue && !stopping {
                if applied == recorded {
                    condition.wait()
                } else if !condition.wait(until: Date(timeIntervalSinceNow: Self.quietInterval)), queue.isEmpty && !readIsDue && !stopping {
                    record(applied, database, projection, logger)
                }
            }
            if queue.isEmpty && !readIsDue { break }
            let batch = queue, from = applied, recordedWithoutLock = recorded
            let through = batch.last?.last?.seq ?? from
            queue = []
            queuedEvents = 0
            var due: [(read: PointRead, submitted: Date)] = []
            while let first = reads.first, first.read.seq <= through {
                due.append(first)
                reads.removeFirst()
            }
            condition.broadcast()
            condition.unlock()
            // Each read runs in the transaction that applies the events, at its point among them: it
            // sees this connection's rows as they are then. A rollback leaves its answer true, since
            // the events are in the log, and the retry applies the same rows.
            var answered: [() -> Void] = []
            var failure: Error?
            var wroteTransaction = false
            do {
                // Events that make no rows here (the planner's other events, beside its decisions) are
                // passed without a transaction: the file's `applied_seq` catches up with them in a
                // quiet moment (`record`), or once `mostUnrecorded` are behind it.
                if !due.isEmpty || through - recordedWithoutLock >= Self.mostUnrecorded
                    || batch.contains(where: { $0.contains(where: projection.makesRows) }) {
                    try database.write { db in
                        let sql = SQLiteStoreConnection(db)
                        func readThrough(_ seq: Int64) {
                            while answered.count < due.count, due[answered.count].read.seq <= seq {
                                let read = due[answered.count].read, result = Result { try read.body(sql) }
                                answered.append { read.answer(result) }
                            }
                        }
                        readThrough(from)
                        for event in batch.joined() {
                            readThrough(event.seq - 1)
                            try projection.apply(event, in: sql)
                        }
                        readThrough(through)
                        if through > recordedWithoutLock { try projection.applied(through: through, in: db) }
                    }
                    wroteTransaction = true
                }
                lastFailure = nil
            } catch {
                failure = error
                if lastFailure != "\(error)" {
                    lastFailure = "\(error)"
                    logger.error("applying the log to the projection failed; retrying", metadata: ["error": "\(error)"])
                }
            }
            condition.lock()
            if failure == nil {
                applied = through
                if wroteTransaction { recorded = max(recorded, through) }
            } else {
                queue = batch + queue
                queuedEvents = queue.reduce(0) { $0 + $1.count }
                // The reads it held back wait for the retry, or fail once they waited too long.
                reads.insert(contentsOf: due[answered.count...], at: 0)
                while let (read, submitted) = reads.first, stopping || -submitted.timeIntervalSinceNow > Self.longestWait {
                    let error = behind(read)
                    answered.append { read.answer(.failure(error)) }
                    reads.removeFirst()
                }
            }
            condition.broadcast()
            answer(answered)
            if failure != nil {
                if stopping { break }  // the next start catches the projection up from the log
                _ = condition.wait(until: Date(timeIntervalSinceNow: 0.1))
            }
        }
        // A clean stop leaves the file's place at the last event applied, rows or none.
        if applied > recorded { record(applied, database, projection, logger) }
        // Stopped with reads the projection could not reach: they fail rather than wait forever.
        answer(reads.map { read, _ in
            let error = behind(read)
            return { read.answer(.failure(error)) }
        })
        reads.removeAll()
        condition.unlock()
    }

    /// Stores `seq` as the file's `applied_seq`: every event through it is applied. Called under
    /// `condition`, which it releases meanwhile. A failure (a full disk) leaves it for the next try.
    private func record(_ seq: Int64, _ database: DatabaseQueue, _ projection: ProjectionFile, _ logger: Logger) {
        condition.unlock()
        let stored = (try? database.write { try projection.applied(through: seq, in: $0) }) != nil
        condition.lock()
        if stored {
            recorded = max(recorded, seq)
            logger.debug("recorded the projection's place in the log", metadata: ["appliedSeq": "\(seq)"])
        }
    }

    /// Whether the first read waiting can run on the rows applied so far. Under `condition`.
    private var readIsDue: Bool { reads.first.map { $0.read.seq <= applied } ?? false }

    private func behind(_ read: PointRead) -> StoreUnavailable {
        StoreUnavailable(reason: "the projection is \(read.seq - applied) events behind the log", label: StoreUnavailable.Cause.projectionBehind)
    }

    /// Hands answers to the loop and wakes it. Under `condition`, on this thread.
    private func answer(_ answered: [() -> Void]) {
        guard !answered.isEmpty else { return }
        answers += answered
        condition.broadcast()
        wake?.signal()
    }
}
