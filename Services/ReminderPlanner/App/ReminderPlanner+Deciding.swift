import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost

// Deciding each occurrence exactly once at its instant (SEMANTICS §3).
extension ReminderPlanner {
    enum DecisionMode {
        /// The planner reached T running (its loop, or a manual clock moved over T): on time.
        case running
        /// T passed while the planner was down: late within the grace window, missed beyond it.
        case startup
    }

    /// Decides everything due up to `now`; a failure is logged and retried on a later turn.
    func decideDue(through now: Instant, mode: DecisionMode) {
        do {
            try decideOrThrow(through: now, mode: mode)
        } catch {
            recoverFromFailedDecisions(error)
        }
    }

    /// Decides every occurrence due up to `now`, in time order, in one transaction that also runs
    /// `alongside`. Returns how many were decided.
    @discardableResult
    func decideOrThrow(through now: Instant, mode: DecisionMode, alongside: ((Transaction) throws -> Void)? = nil) throws -> Int {
        let due = scheduler.nextInstant.map { $0 <= now } ?? false
        guard due || alongside != nil else {
            decidedThrough = max(decidedThrough, now)
            return 0
        }
        // A known gap in our copy of the session log is fetched before deciding, without holding the
        // loop: see `decideRunning` and the clock ops (fail-safe after 2 s).
        var count = 0
        try host.write { tx in
            try alongside?(tx)
            // One at a time, rescheduling before the next pop: strict time order, and a reminder's
            // following occurrence is decided in this call too when the clock moved over it.
            while let (id, planned) = scheduler.popNext(through: now) {
                guard let reminder = reminders[id] else { continue }
                let settings = user(reminder.userId)
                if try decide(planned, of: reminder, user: settings, now: now, mode: mode, tx) { count += 1 }
                scheduler.schedule(reminder, zone: settings.timeZone, from: planned.at.adding(milliseconds: 1))
            }
            decidedThrough = max(decidedThrough, now)
            try persistDecidedThrough(tx)
        }
        return count
    }

    /// After a failed decision transaction, memory goes back to what is stored.
    func recoverFromFailedDecisions(_ error: Error) {
        host.recordError("deciding failed; will retry", ["error": "\(error)"])
        let stored = try? host.read { db in try PlannerStore.value("decidedThroughMs", db) }
        decidedThrough = stored.flatMap { $0 }.map(Instant.init(millisecondsSince1970:)) ?? decidedThrough
        rebuildSchedule()
    }

    /// Decides one occurrence and stores its decision event; false if it was decided before.
    private func decide(_ planned: PlannedOccurrence, of reminder: Reminder, user: UserSettings, now: Instant,
                        mode: DecisionMode, _ tx: Transaction) throws -> Bool {
        let timeliness: Timeliness = switch mode {
        case .running: .onTime
        case .startup: Timeliness.classify(now: now, at: planned.at, graceMinutes: settings.graceMinutes)
        }
        var status = OccurrenceStatus.missed
        var cause: RecordID?
        if timeliness != .missed {
            let restored = restored.contains(OccurrenceKey(reminder: reminder.id, at: planned.at))
            let covering = restored ? nil : try self.cause(covering: planned, of: reminder, tx.db)
            switch Decision.decide(paused: user.paused, coveringCause: covering?.description, restored: restored) {
            case .skipped: status = .skipped
            case .suppressed: status = .suppressed; cause = covering
            case .due: status = .fired
            }
        }
        // Its announcement row, if any, stays: announcements only ever matter for undecided occurrences.
        guard try PlannerStore.decide(reminder.id, at: planned.at, status: status, cause: cause, tx.db) else { return false }
        tx.afterCommit { [unowned self] in host.countMetric("decisions", "kind", Self.decisionKind(status)) }
        let occurrence = makeOccurrence(reminder, planned, status: status, cause: cause)
        switch status {
        case .fired:
            try tx.append(Events.reminderDue, userId: reminder.userId, activity: reminder.activity,
                          data: DueOccurrence(occurrence: occurrence, timeZone: user.timeZone, locale: user.locale,
                                              title: reminder.title, body: reminder.body, late: timeliness == .late, test: false))
        default:
            guard let event = Events.decision(status) else { throw WireError(.internal, "\(status) is not a decision") }
            try tx.append(event, userId: reminder.userId, activity: reminder.activity, data: occurrence)
        }
        return true
    }

    /// `lht_decisions_total{kind}`: the decision's event type without `reminder.`.
    static func decisionKind(_ status: OccurrenceStatus) -> String { status == .fired ? "due" : status.rawValue }

    func persistDecidedThrough(_ tx: Transaction) throws {
        try PlannerStore.setValue("decidedThroughMs", decidedThrough.millisecondsSince1970, tx.db)
    }
}
