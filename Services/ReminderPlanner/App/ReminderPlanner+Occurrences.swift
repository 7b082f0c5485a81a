import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// Occurrences as the user sees them, what covers them, and announcing coverage before T (SEMANTICS §1–§2).
extension ReminderPlanner {
    func makeOccurrence(_ reminder: Reminder, _ planned: PlannedOccurrence, status: OccurrenceStatus, cause: RecordID?) -> Occurrence {
        let isNoAlc = reminder.activity == .noalc
        return Occurrence(
            reminderId: reminder.id, userId: reminder.userId, activity: reminder.activity, at: planned.at, localTime: planned.localTime,
            day: planned.day, weekday: planned.weekday,
            windowStart: isNoAlc ? nil : Coverage.windowStart(of: planned.at, lookbackHours: reminder.lookbackHours),
            status: status, cause: cause,
            targetDay: isNoAlc ? Coverage.noalcTargetDay(ruleDay: planned.day, ruleTime: reminder.time) : nil)
    }

    /// What covers the occurrence, if anything: a session overlapping its window, or an entry for its
    /// target day. The store only narrows the candidates; `Coverage.cause` decides (SEMANTICS §2).
    func cause(covering planned: PlannedOccurrence, of reminder: Reminder, latest: LatestLogged? = nil, _ sql: StoreConnection) throws -> RecordID? {
        Coverage.cause(of: planned, of: reminder,
                       candidates: try PlannerStore.coverageCandidates(of: reminder, from: planned, through: planned, latest: latest, sql))
    }

    /// Undecided occurrences of `reminder` that something already logged could cover: sessions
    /// start at most 5 minutes ahead and last at most a day, windows at most 48 h; NoAlc entries
    /// may name any day, so a month ahead (the longest `reminder.upcoming`) is looked at.
    private func coverableOccurrences(of reminder: Reminder, zone: ZoneID) -> [PlannedOccurrence] {
        guard reminder.enabled, !reminder.weekdays.isEmpty else { return [] }
        return OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.rules,
                                              from: firstPending(reminder), through: coverageHorizon(of: reminder))
    }

    private func coverageHorizon(of reminder: Reminder) -> Instant {
        host.time.now().adding(seconds: (reminder.activity == .noalc ? 32 * 24 : 24 + 48 + 1) * 3600)
    }

    /// The earliest instant an undecided occurrence of `reminder` can have: just after everything
    /// decided, or its creation instant if that is later (an occurrence exactly then exists too).
    func firstPending(_ reminder: Reminder) -> Instant {
        Self.firstPending(createdAt: reminder.createdAt, decidedThrough: decidedThrough[reminder.userId])
    }

    static func firstPending(createdAt: Instant, decidedThrough: Instant) -> Instant {
        createdAt >= decidedThrough ? createdAt : decidedThrough.adding(milliseconds: 1)
    }

    /// Announces `reminder.cancelled` once for each undecided occurrence that became covered, among
    /// the candidates of each of `user`'s `reminders`. Announcements come before T: one whose T has
    /// passed (the planner was down) is decided instead.
    func announceCancellations(of user: UserID, _ reminders: [(reminder: Reminder, candidates: [PlannedOccurrence])],
                               in tx: Transaction) throws {
        try announce(covered(undecided(reminders), tx.sql), of: user, in: tx)
    }

    /// Each reminder with those of its candidates that are not decided, restored or past.
    func undecided(_ reminders: [(reminder: Reminder, candidates: [PlannedOccurrence])]) -> [(reminder: Reminder, occurrences: [PlannedOccurrence])] {
        reminders.map { (reminder: $0.reminder, occurrences: undecidedOccurrences(of: $0.reminder, among: $0.candidates)) }
    }

    /// The undecided occurrences that something logged covers, with their cause, in order.
    func covered(_ undecided: [(reminder: Reminder, occurrences: [PlannedOccurrence])],
                 _ sql: StoreConnection) throws -> [(Reminder, PlannedOccurrence, RecordID)] {
        let shared = try sharedSessionCandidates(undecided, sql)
        return try undecided.flatMap {
            try coveredOccurrences(of: $0.reminder, among: $0.occurrences, covering: shared[$0.reminder.activity], sql)
        }
    }

    /// Announces `reminder.cancelled` once for each covered occurrence not announced before, in
    /// the order covered. `announcedBefore`: what this transaction read was announced, under the
    /// log row's lock (no other transaction announces meanwhile); nil: the INSERT tells.
    func announce(_ covered: [(Reminder, PlannedOccurrence, RecordID)], of user: UserID, announcedBefore: Set<OccurrenceKey>? = nil,
                  in tx: Transaction) throws {
        guard !covered.isEmpty else { return }
        let announcements = covered.map { (reminder: $0.0, at: $0.1.at, cause: $0.2) }
        var announced: Set<OccurrenceKey>
        if let announcedBefore {
            let new = announcements.filter { !announcedBefore.contains(OccurrenceKey(reminder: $0.reminder.id, at: $0.at)) }
            try PlannerStore.announceLater(new, tx.sql)
            announced = Set(new.map { OccurrenceKey(reminder: $0.reminder.id, at: $0.at) })
        } else {
            announced = try PlannerStore.announce(announcements, tx.sql)
        }
        let announcedAny = !announced.isEmpty
        // In the order covered, each newly announced one once.
        for (reminder, planned, cause) in covered where announced.remove(OccurrenceKey(reminder: reminder.id, at: planned.at)) != nil {
            try tx.append(Events.reminderCancelled, userId: reminder.userId, activity: reminder.activity,
                          data: makeOccurrence(reminder, planned, status: .cancelled, cause: cause))
        }
        // The user's decided announcements go with its next new one, on the leaf that one wrote
        // (`PlannerStore.announcementsByUser`), once an event.
        if announcedAny { try PlannerStore.forgetAnnouncements(of: user, through: decidedThrough[user], tx.sql) }
    }

    /// The candidates that are not decided, restored or past.
    private func undecidedOccurrences(of reminder: Reminder, among candidates: [PlannedOccurrence]) -> [PlannedOccurrence] {
        let pending = firstPending(reminder), now = host.time.now()
        return candidates.filter { $0.at >= pending && $0.at > now && !restored.contains(OccurrenceKey(reminder: reminder.id, at: $0.at)) }
    }

    /// The undecided occurrences that something logged covers, with their cause; `covering`: what
    /// could cover them, read already, else asked here.
    private func coveredOccurrences(of reminder: Reminder, among undecided: [PlannedOccurrence], covering shared: [CoverageCandidate]?,
                                    _ sql: StoreConnection) throws -> [(Reminder, PlannedOccurrence, RecordID)] {
        guard let first = undecided.min(by: { $0.at < $1.at }), let last = undecided.max(by: { $0.at < $1.at }) else { return [] }
        // One query for them all (a NoAlc reminder has a month of them): `Coverage.cause` takes any superset.
        let covering = try shared
            ?? PlannerStore.coverageCandidates(of: reminder, from: first, through: last, latest: latestLogged(by: reminder.userId), sql)
        return undecided.compactMap { planned in Coverage.cause(of: planned, of: reminder, candidates: covering).map { (reminder, planned, $0) } }
    }

    /// On a shared store, where each query is a round trip: one query per session activity for all of
    /// the user's reminders of it that have undecided occurrences, over the span of all their
    /// windows (a superset of each one's, which `Coverage.cause` takes). Elsewhere none: each
    /// reminder asks for its own, and `LatestLogged` may spare the query.
    private func sharedSessionCandidates(_ undecided: [(reminder: Reminder, occurrences: [PlannedOccurrence])],
                                         _ sql: StoreConnection) throws -> [Activity: [CoverageCandidate]] {
        guard host.store.isShared else { return [:] }
        var spans: [Activity: (user: UserID, first: Instant, last: Instant, lookbackHours: Int, reminders: Int)] = [:]
        for (reminder, occurrences) in undecided where reminder.activity != .noalc {
            guard let first = occurrences.map(\.at).min(), let last = occurrences.map(\.at).max() else { continue }
            let span = spans[reminder.activity] ?? (reminder.userId, first, last, reminder.lookbackHours, 0)
            spans[reminder.activity] = (span.user, min(span.first, first), max(span.last, last), max(span.lookbackHours, reminder.lookbackHours),
                                        span.reminders + 1)
        }
        var candidates: [Activity: [CoverageCandidate]] = [:]
        for (activity, span) in spans where span.reminders > 1 {
            candidates[activity] = try PlannerStore.sessionCandidates(user: span.user, activity: activity, from: span.first, through: span.last,
                                                                      lookbackHours: span.lookbackHours, sql)
        }
        return candidates
    }

    /// After a put or a zone change: announce what is newly covered, withdraw what no longer is
    /// (a new reminder has nothing announced to withdraw).
    func reevaluate(_ reminder: Reminder, isNew: Bool = false, zone: ZoneID, in tx: Transaction) throws {
        let candidates = coverableOccurrences(of: reminder, zone: zone)
        if !isNew {
            let current = Set(candidates.map(\.at.millisecondsSince1970))
            // Beyond the horizon nothing was re-examined, so what was announced there stands.
            let horizon = reminder.enabled ? coverageHorizon(of: reminder).millisecondsSince1970 : .max
            for at in try PlannerStore.announced(of: reminder, tx.sql).keys where !current.contains(at) && at <= horizon {
                try PlannerStore.withdrawAnnouncement(reminder, at: at, tx.sql)
            }
        }
        try announceCancellations(of: reminder.userId, [(reminder, candidates)], in: tx)
    }

    func upcoming(_ query: UpcomingRequest, _ tx: Transaction) throws -> [Occurrence] {
        let zone = user(query.userId).timeZone
        let today = host.time.now().local(in: zone).day
        var result: [Occurrence] = []
        for reminder in reminders.owned(by: query.userId) where reminder.enabled {
            let planned = OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.rules,
                                                         days: today...today.adding(days: query.days - 1))
                .filter { $0.at >= reminder.createdAt }
            guard let first = planned.first, let last = planned.last else { continue }
            // A day away on either side: new zone rules may have moved a decided day's instant.
            let decisions = try decisions(of: reminder.id, from: first.at.adding(seconds: -86_400), through: last.at.adding(seconds: 86_400), tx)
            let decidedDays = Dictionary(decisions.values.compactMap { decided in decided.occurrence.map { ($0.day, decided) } }) { first, _ in first }
            for occurrence in planned {
                if let decided = decisions[occurrence.at.millisecondsSince1970] ?? decidedDays[occurrence.day].flatMap({
                    // The same rule day and time decided at another instant: shown as it was decided.
                    $0.occurrence?.localTime == occurrence.localTime ? $0 : nil
                }) {
                    result.append(makeOccurrence(reminder, decided.occurrence ?? occurrence, status: decided.status, cause: decided.cause))
                } else if occurrence.at >= firstPending(reminder) {
                    let restored = restored.contains(OccurrenceKey(reminder: reminder.id, at: occurrence.at))
                    let cause = restored ? nil : try cause(covering: occurrence, of: reminder, tx.sql)
                    result.append(makeOccurrence(reminder, occurrence, status: cause == nil ? .scheduled : .cancelled, cause: cause))
                }
                // Undecided and already past: the reminder was edited after its instant; it never existed.
            }
        }
        return result.sorted { ($0.at, $0.reminderId) < ($1.at, $1.reminderId) }
    }
}
