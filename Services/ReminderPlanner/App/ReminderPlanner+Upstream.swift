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
            if host.store.isShared { return try applyShared(session, seq: event.seq, tx) }
            _ = try followIfPending(tx)
            guard try PlannerStore.insert(session: session, seq: event.seq, tx.sql) else { return }
            tx.afterCommit { [unowned self] in host.count("sessionsApplied") }
            try announceCancellations(of: session.userId, candidates(coveredBy: session), in: tx)
        case .noalcLogged(let entry):
            _ = try followIfPending(tx)
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

    /// Each of the user's reminders of the session's activity with the occurrences it could cover.
    private func candidates(coveredBy session: StoredSession) -> [(reminder: Reminder, candidates: [PlannedOccurrence])] {
        let zone = user(session.userId).timeZone
        return reminders(of: session.userId, activity: session.activity).map { reminder in
            let latest = session.end.adding(seconds: Int64(reminder.lookbackHours) * 3600)
            return (reminder, OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.rules,
                                                             from: max(session.start, firstPending(reminder)), through: latest))
        }
    }

    /// A session on a shared store, where each statement read is a round trip: its copy, what was
    /// announced of the occurrences it could cover and the sessions that could cover them go out
    /// in one round trip (in an upstream write's first, with the lock and the memory version), the
    /// announcements and events after them with the COMMIT. The same outcome as
    /// `insert(session:)` and `announceCancellations`.
    private func applyShared(_ session: StoredSession, seq: Int64, _ tx: Transaction) throws {
        if tx.expectsInsteadOfReading { return try applyExpecting(session, seq: seq, tx) }
        var inserted: Bool?
        try PlannerStore.insertLater(session: session, seq: seq, tx.sql) { inserted = $0 }
        var read = try readCoverage(of: session, tx.sql)
        // Rarely, another instance changed what memory holds: read again from the memory it follows to.
        if try followIfPending(tx) { read = try readCoverage(of: session, tx.sql) }
        if inserted == nil { try tx.sql.sendWaiting() }
        guard inserted == true else { return }
        tx.afterCommit { [unowned self] in host.count("sessionsApplied") }
        try announce(read.covered, of: session.userId, announcedBefore: read.announcedBefore, in: tx)
    }

    /// `applyShared` sent whole with the COMMIT: what it reads is expected instead, and the store
    /// runs it again the usual way where the database says otherwise. Expected: the session is
    /// new, and none of the occurrences it covers was announced. Then the session alone is what
    /// covers them: an earlier one that covered one too had it announced, at its own apply or at
    /// the put that made the occurrence, so the usual way's answer is the same (SEMANTICS §2).
    private func applyExpecting(_ session: StoredSession, seq: Int64, _ tx: Transaction) throws {
        let logged = CoverageCandidate.session(id: session.id, userId: session.userId, activity: session.activity,
                                               start: session.start, end: session.end, loggedOrder: seq)
        let covered = undecided(candidates(coveredBy: session)).flatMap { reminder, occurrences in
            occurrences.compactMap { planned in Coverage.cause(of: planned, of: reminder, candidates: [logged]).map { (reminder, planned, $0) } }
        }
        try PlannerStore.expectNew(session: session, seq: seq, tx.sql)
        try PlannerStore.expectNoneAnnounced(covered.map { (reminder: $0.0, at: $0.1.at) }, tx.sql)
        try PlannerStore.insertLater(session: session, seq: seq, tx.sql) { _ in }
        tx.afterCommit { [unowned self] in host.count("sessionsApplied") }
        try announce(covered, of: session.userId, announcedBefore: [], in: tx)
    }

    /// What of the occurrences `session` could cover was announced, and which it covers, read
    /// together (the first queued, the second read with it).
    private func readCoverage(of session: StoredSession, _ sql: StoreConnection) throws
        -> (announcedBefore: Set<OccurrenceKey>, covered: [(Reminder, PlannedOccurrence, RecordID)]) {
        var announcedBefore: Set<OccurrenceKey> = []
        let open = undecided(candidates(coveredBy: session))
        let instants = open.flatMap { $0.occurrences.map(\.at) }
        if let first = instants.min(), let last = instants.max() {
            try PlannerStore.announcedLater(of: open.map(\.reminder), from: first, through: last, sql) { announcedBefore.insert($0) }
        }
        let covered = try covered(open, sql)
        if !covered.isEmpty, sql.hasStatementsWaiting { try sql.sendWaiting() }
        return (announcedBefore, covered)
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
