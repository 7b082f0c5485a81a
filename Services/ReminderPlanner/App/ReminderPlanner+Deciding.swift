import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// Deciding each occurrence exactly once at its instant (SEMANTICS §3).
extension ReminderPlanner {
    /// Decides everything due up to `now`; a failure is logged and retried on a later turn.
    func decideDue(through now: Instant) {
        do {
            try decideOrThrow(through: now)
        } catch {
            recoverFromFailedDecisions(error)
        }
    }

    /// Decides what is due up to `now`, in time order, in one bounded step: a transaction stops after
    /// `clockStepOccurrences` or `clockStepNanoseconds` of work, so that the log row's lock, which
    /// every instance's writes wait for, is held briefly however many occurrences share an instant.
    /// What is left stays in the schedule, due: the loop answers requests and takes the next step at
    /// once (`nextDeadline`). Returns how many were decided. (A manual clock moves in `decideStep`.)
    @discardableResult
    func decideOrThrow(through now: Instant) throws -> Int {
        let due = scheduler.nextInstant.map { $0 <= now } ?? false
        guard due else {
            decidedThrough.advance(to: now)
            return 0
        }
        // A known gap in our copy of the session log is fetched before deciding, without holding the
        // loop: see `decideRunning` and the clock ops (fail-safe after 2 s).
        var tally = DecisionTally()
        try host.write { tx in
            keepDecidedThroughOnRollback(tx)
            // One at a time, rescheduling before the next pop: strict time order, and a reminder's
            // following occurrence is decided in this call too when the clock moved over it. The
            // work is timed from here, with the lock taken: a wait for it is not work.
            try decideBounded(through: now, started: DispatchTime.now().uptimeNanoseconds, tx, &tally)
            // Stopped within an instant: decided through just before it (its decided rows or
            // `partlyDecided` keep the next step from deciding one twice).
            let undecided = scheduler.nextInstant.flatMap { $0 <= now ? $0 : nil }
            decidedThrough.advance(to: undecided.map { $0.adding(milliseconds: -1) } ?? now)
            try persistDecidedThrough(tx)
            countAfterCommit(tally, tx)
        }
        return tally.decided
    }

    /// Decides in time order what is due by `bound`, until nothing is or the step's share of work
    /// (`clockStepOccurrences`, `clockStepNanoseconds` since `started`) is done.
    /// The clock is read every 16 pops on SQLite, not at each (docs/decisions/0016-planner-deciding-loop.md),
    /// and `health` answered then if it waited long. On PostgreSQL it is read at every pop: each
    /// decision still waits for its coverage read, whose round trip dwarfs the reading, and 16 of
    /// them can outrun the step's time. Decisions whose rows answer (PostgreSQL) go out a
    /// `DecisionChunk` at a time, their events after them.
    private func decideBounded(through bound: Instant, started: UInt64, _ tx: Transaction, _ tally: inout DecisionTally) throws {
        let every = host.store.isShared ? 1 : 16
        var popped = 0
        let chunk = DecisionChunk()
        while popped < clockStepOccurrences, try decideNext(through: bound, tx, chunk, &tally) {
            popped += 1
            if chunk.isFull { try announceFirst(of: chunk, tx, &tally) }
            guard popped % every == 0 else { continue }
            let now = DispatchTime.now().uptimeNanoseconds
            host.answerHealthIfDue(now: now)
            if now - started >= Self.clockStepNanoseconds { break }
        }
        try announceFirst(of: chunk, tx, &tally)
    }

    /// Pops the earliest occurrence due by `bound`, decides it if its user's partition is this
    /// instance's, and schedules its reminder's next one; false when nothing is due.
    private func decideNext(through bound: Instant, _ tx: Transaction, _ chunk: DecisionChunk, _ tally: inout DecisionTally) throws -> Bool {
        guard let (row, planned) = scheduler.popNext(through: bound) else { return false }
        let (reminder, settings, latest) = reminderAndUser(inRow: row)
        if host.store.ownedPartitions.contains(reminder.userId),
           let decision = try decide(planned, of: reminder, user: settings, latest: latest, now: bound, tx) {
            try record(decision, tx, chunk, &tally)
        }
        scheduler.schedule(reminder, row: row, zone: settings.timeZone, from: planned.at.adding(milliseconds: 1))
        return true
    }

    private func countAfterCommit(_ tally: DecisionTally, _ tx: Transaction) {
        tx.afterCommit { [unowned self] in
            for (status, count) in tally.byStatus { host.countMetric("decisions", "kind", Self.decisionKind(status), by: Int64(count)) }
        }
    }

    // MARK: Moving a manual clock in steps

    /// A manual clock moves at most a day per step, and a step (of it, or of the live loop) stops
    /// after `clockStepOccurrences` or this much work, whichever comes first: each step is one
    /// transaction, and between steps the planner answers other requests (`clock.advance` over
    /// months must not stall `health`, a burst at one instant must not stall the other instances;
    /// docs/decisions/0016-planner-deciding-loop.md).
    static let clockStepSeconds: Int64 = 86_400
    static let clockStepNanoseconds: UInt64 = 10_000_000

    struct ClockStep {
        /// Decisions taken (and published) in the step.
        let decided: Int
        /// The clock the step committed: every occurrence at or before it is decided.
        let reached: Instant
        /// Nothing due at or before the step's bound is left undecided.
        let finished: Bool
    }

    /// One step of a clock move from `previous` towards `bound` (at most a day on): decides in time
    /// order what is due up to `bound`, stopping early after `clockStepOccurrences` or
    /// `clockStepNanoseconds`, and stores the decisions with the new `decidedThrough` and manual clock
    /// in one transaction. The new clock is `bound` when everything up to it is decided, otherwise
    /// just before the first instant with an occurrence still undecided (never before `previous`):
    /// a crash after the commit restarts exactly there, and an occurrence decided in a step that
    /// stopped within its instant is not decided again (its decision row is its key).
    func decideStep(from previous: Instant, through bound: Instant) throws -> ClockStep {
        // An instance that holds no partitions (its leases went with a lost connection) takes its
        // share first: a clock moved over occurrences it may not decide would pass them over.
        if host.store.isShared, host.store.ownedPartitions.isEmpty { try takeShare(now: previous) }
        if scheduler.nextInstant.map({ $0 <= bound }) ?? false, feed.upstreamSeq > feed.appliedSeq { feed.catchUp() }
        let started = DispatchTime.now().uptimeNanoseconds
        return try host.write { tx in
            keepDecidedThroughOnRollback(tx)
            tx.reserveCapacity(forEvents: clockStepOccurrences)
            var tally = DecisionTally()
            try decideBounded(through: bound, started: started, tx, &tally)
            countAfterCommit(tally, tx)
            let undecided = scheduler.nextInstant.flatMap { $0 <= bound ? $0 : nil }
            let reached = undecided.map { max(previous, $0.adding(milliseconds: -1)) } ?? bound
            decidedThrough.advance(to: reached)
            try persistDecidedThrough(tx)
            try PlannerStore.setValue("manualNowMs", reached.millisecondsSince1970, tx.sql)
            return ClockStep(decided: tally.decided, reached: reached, finished: undecided == nil)
        }
    }

    /// `decidedThrough` as it was before `tx`, should `tx` roll back: the occurrences it popped are
    /// scheduled again from there (`recoverFromFailedDecisions`), whether or not the store can be
    /// read then (a database that went away mid-commit cannot). So is what is known of the instant after it.
    private func keepDecidedThroughOnRollback(_ tx: Transaction) {
        let before = (decidedThrough, partlyDecided)
        tx.onRollback { [unowned self] in (decidedThrough, partlyDecided) = before }
    }

    /// After a failed decision transaction, memory goes back to what is stored: `decidedThrough`
    /// went back with the transaction, and the schedule is built again from it. What is due by now
    /// was due while nothing could be decided: it is decided by the grace window, as after a
    /// restart. Timed work waits a second before it tries again (`StoreRetry`).
    func recoverFromFailedDecisions(_ error: Error, _ message: String = "deciding failed; will retry") {
        host.recordError(message, ["error": "\(error)"])
        backlogThrough = max(backlogThrough, host.time.now())
        rebuildSchedule()
        storeRetry.failed()
    }

    /// Decides one occurrence; nil if its rule day is known to be decided before. One the planner
    /// reached running (its loop, or a manual clock moved over it) is on time; one that fell due while
    /// nobody decided it (`backlogThrough`) is late within the grace window, missed beyond.
    private func decide(_ planned: PlannedOccurrence, of reminder: Reminder, user: UserSettings, latest: LatestLogged?, now: Instant,
                        _ tx: Transaction) throws -> TakenDecision? {
        if !movedDecidedDays.isEmpty, let moved = movedDecidedDays[reminder.id], planned.day <= moved.day { return nil }
        let timeliness = planned.at <= backlogThrough
            ? Timeliness.classify(now: now, at: planned.at, graceMinutes: settings.graceMinutes) : .onTime
        var status = OccurrenceStatus.missed
        var cause: RecordID?
        if timeliness != .missed {
            let restored = !restored.isEmpty && restored.contains(OccurrenceKey(reminder: reminder.id, at: planned.at))
            let covering = restored ? nil : try self.cause(covering: planned, of: reminder, latest: latest, tx.sql)
            switch Decision.decide(paused: user.paused, coveringCause: covering?.description, restored: restored) {
            case .skipped: status = .skipped
            case .suppressed: status = .suppressed; cause = covering
            case .due: status = .fired
            }
        }
        return TakenDecision(reminder: reminder, planned: planned, user: user, status: status, cause: cause, late: timeliness == .late)
    }

    /// Records a decision, and appends its event if it is the occurrence's first. Where `tx` writes
    /// the decision rows (PostgreSQL), the row answers: the occurrence's, or its rule day's at another
    /// instant (`decideOnce`), queued in `chunk` and read back with the rest of it. Where they are
    /// applied behind the log from the decision events (SQLite), memory answers at once, and the
    /// stored decisions only for an instant an earlier process may have left partly decided
    /// (`PartlyDecidedInstant`). An announcement row, if any, stays: announcements only ever matter
    /// for undecided occurrences.
    private func record(_ decision: TakenDecision, _ tx: Transaction, _ chunk: DecisionChunk, _ tally: inout DecisionTally) throws {
        guard tx.projectionLags else { return try chunk.queue(decision, tx.sql) }
        let key = OccurrenceKey(reminder: decision.reminder.id, at: decision.planned.at)
        let decidedBefore = try partlyDecided.isDecided(key)
            ?? !decisions(of: decision.reminder.id, from: decision.planned.at, through: decision.planned.at, tx).isEmpty
        if decidedBefore { return }
        partlyDecided.record(key)
        try announce(decision, tx, &tally)
    }

    /// Reads `chunk`'s rows back and announces, in pop order, the decisions that were the first.
    private func announceFirst(of chunk: DecisionChunk, _ tx: Transaction, _ tally: inout DecisionTally) throws {
        for decision in try chunk.firstDecisions(tx.sql) { try announce(decision, tx, &tally) }
    }

    /// Appends a first decision's event, and counts it.
    private func announce(_ decision: TakenDecision, _ tx: Transaction, _ tally: inout DecisionTally) throws {
        let reminder = decision.reminder, user = decision.user
        let occurrence = makeOccurrence(reminder, decision.planned, status: decision.status, cause: decision.cause)
        switch decision.status {
        case .fired:
            try tx.append(Events.reminderDue, userId: reminder.userId, activity: reminder.activity,
                          data: DueOccurrence(occurrence: occurrence, timeZone: user.timeZone, locale: user.locale,
                                              title: reminder.title, body: reminder.body, late: decision.late, test: false))
        default:
            guard let event = Events.decision(decision.status) else { throw WireError(.internal, "\(decision.status) is not a decision") }
            try tx.append(event, userId: reminder.userId, activity: reminder.activity, data: occurrence)
        }
        tally.add(decision.status)
    }

    /// The reminder's decisions from `from` through `through`, by instant, with those taken in `tx` so far.
    func decisions(of reminder: RecordID, from: Instant, through: Instant, _ tx: Transaction) throws -> [Int64: PlannerStore.Recorded] {
        var found = try tx.readTables { try PlannerStore.decisions(of: reminder, from: from, through: through, $0) }
        // Where the decisions lag, this transaction's own are among its events only.
        guard tx.projectionLags else { return found }
        for event in tx.events {
            guard let decided = event.data.flatMap(PlannerStore.decision(in:)), decided.reminderId == reminder,
                  decided.at >= from, decided.at <= through else { continue }
            found[decided.at.millisecondsSince1970] = PlannerStore.Recorded(status: decided.status, cause: decided.cause, occurrence: PlannedOccurrence(decided))
        }
        return found
    }

    /// `lht_decisions_total{kind}`: the decision's event type without `reminder.`.
    static func decisionKind(_ status: OccurrenceStatus) -> String { status == .fired ? "due" : status.rawValue }

    /// Stores how far the partitions this instance owns are decided.
    func persistDecidedThrough(_ tx: Transaction) throws {
        for (instant, partitions) in decidedThrough.grouped(host.store.ownedPartitions) {
            try PlannerStore.setDecidedThrough(instant, of: partitions, tx.sql)
        }
    }
}
