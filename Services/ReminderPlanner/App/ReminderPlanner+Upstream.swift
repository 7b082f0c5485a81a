import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// What the planner follows from the session logger.
extension ReminderPlanner {
    /// Applies one session-logger event: store what covers occurrences and announce what it cancels.
    func apply(_ event: ReceivedEvent, _ tx: Transaction) throws {
        switch event.data {
        case .sessionLogged(let session):
            noteLogged(by: session.userId) { $0.logged(sessionOf: session.activity, endingAt: session.end.millisecondsSince1970) }
            guard try PlannerStore.insert(session: session, seq: event.seq, tx.sql) else { return }
            tx.afterCommit { [unowned self] in host.count("sessionsApplied") }
            let zone = user(session.userId).timeZone
            try announceCancellations(of: session.userId, reminders(of: session.userId, activity: session.activity).map { reminder in
                let latest = session.end.adding(seconds: Int64(reminder.lookbackHours) * 3600)
                return (reminder, OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.rules,
                                                                 from: max(session.start, firstPending(reminder)), through: latest))
            }, in: tx)
        case .noalcLogged(let entry):
            guard try PlannerStore.insert(noalcDay: entry.day, user: entry.userId, entry: entry.id, tx.sql) else { return }
            tx.afterCommit { [unowned self] in host.count("noalcEntriesApplied") }
            let zone = user(entry.userId).timeZone
            try announceCancellations(of: entry.userId, reminders(of: entry.userId, activity: .noalc).map { reminder in
                // The entry's day is the target day of an occurrence on that day (evening rule) or the next (morning rule).
                let ruleDay = reminder.time >= Coverage.noalcEveningStart ? entry.day : entry.day.adding(days: 1)
                return (reminder, OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.rules, days: ruleDay...ruleDay))
            }, in: tx)
        default:
            return
        }
    }

    /// The loop's turn (SEMANTICS §3): occurrences due now are decided after a known gap in our copy
    /// of the session log is fetched. The fetch runs without holding the loop; the decisions wait for
    /// it on later turns, up to 2 s: if the logger does not answer by then, they are decided with what
    /// we know (missing sessions only mean fewer suppressions: fail-safe).
    func decideRunning(through now: Instant) {
        let due = scheduler.nextInstant.map { $0 <= now } ?? false
        // A failed decision transaction (a database away) is tried again a second later, not every turn.
        if due, !storeRetry.isDue { return }
        if due, feed.waitsForKnownGap(limitMilliseconds: 2000) { return }
        decideDue(through: now)
    }

    /// Runs `body` once the session log as the logger has it now is applied: after a catch-up round
    /// that started after this call, or its 2 s deadline (fail-safe). The loop serves meanwhile.
    func afterCatchingUp(_ body: @escaping () -> Void) {
        feed.catchUpInBackground(timeoutMilliseconds: 2000) { _ in body() }
    }

    private func reminders(of user: UserID, activity: Activity) -> [Reminder] {
        reminders.owned(by: user).filter { $0.activity == activity && $0.enabled }
    }
}
