import Foundation
import GRDB
import LHTSchema
import Logging
import ReminderPlanning
import ServiceHost
import ZeroMQ

/// Keeps reminders, computes their occurrences in each user's zone, announces cancellations as
/// soon as activity covers an occurrence, and decides every occurrence exactly once at its instant.
///
/// Users and reminders live in memory (changed after commit, by ops that run alone); everything
/// coverage depends on is read from SQLite inside the deciding transaction, so a decision always
/// sees what was stored before it.
public final class ReminderPlanner: Service {
    public let host: ServiceHost
    private let settings: PlannerSettings
    private let manualClock: ManualTime?
    private var feed: UpstreamFeed!
    private var scheduler = Scheduler()
    private var users: [UserID: UserSettings] = [:]
    private var reminders: [RecordID: Reminder] = [:]
    /// A user has a handful of reminders: an array is smaller and faster to build than a set.
    private var remindersByUser: [UserID: [RecordID]] = [:]
    /// Every occurrence at or before this instant is decided (or never existed).
    private var decidedThrough: Instant
    /// Occurrences the user restored (few; read for every decision, so kept in memory too).
    private var restored: Set<OccurrenceKey> = []

    private enum DecisionMode {
        /// The planner reached T running (its loop, or a manual clock moved over T): on time.
        case running
        /// T passed while the planner was down: late within the grace window, missed beyond it.
        case startup
    }

    public init(settings: PlannerSettings, logger: Logger, context: Context? = nil) throws {
        self.settings = settings
        let time: TimeSource
        if case .manual(let start) = settings.clock {
            manualClock = ManualTime(start)
            time = manualClock!
        } else {
            manualClock = nil
            time = SystemTime()
        }
        host = try ServiceHost(service: settings.service.name, apiEndpoint: settings.service.api,
                               eventsEndpoint: settings.service.events, dataDirectory: settings.service.dataDirectory,
                               migrations: PlannerStore.migrate, logger: logger, time: time, context: context)
        let stored = try host.read { db in
            (users: try PlannerStore.users(db), reminderCount: try PlannerStore.reminderCount(db),
             decidedThrough: try PlannerStore.value("decidedThroughMs", db), manualNow: try PlannerStore.value("manualNowMs", db),
             restored: try PlannerStore.restoredOccurrences(db))
        }
        if let manualClock {
            // A restart never moves a manual clock backwards, whatever the flag says.
            manualClock.current = max(manualClock.current, Instant(millisecondsSince1970: stored.manualNow ?? .min))
            try host.write { tx in try PlannerStore.setValue("manualNowMs", manualClock.current.millisecondsSince1970, tx.db) }
        }
        // A fresh planner has nothing to catch up on: occurrences exist from now on.
        decidedThrough = stored.decidedThrough.map(Instant.init(millisecondsSince1970:)) ?? time.now()
        restored = stored.restored
        for user in stored.users { users[user.userId] = user }
        // Streamed from a cursor into the maps (sized up front), then scheduled: a million reminders
        // never exist as one intermediate array.
        reminders.reserveCapacity(stored.reminderCount)
        try host.read { db in try PlannerStore.forEachReminder(db) { remember($0) } }
        rebuildSchedule()

        feed = try UpstreamFeed(upstream: .sessionLogger, host: host, eventsEndpoint: settings.sessionLoggerEvents,
                                apiEndpoint: settings.sessionLoggerAPI) { [unowned self] event, tx in
            try self.apply(event, tx)
        }
        registerOps()
        host.count("sessionsApplied", by: 0)
        host.count("noalcDaysApplied", by: 0)
        feed.catchUp()
        decideDue(through: time.now(), mode: .startup)
        host.nextDeadline = { [unowned self] in self.manualClock == nil ? self.scheduler.nextInstant : nil }
        host.onTick = { [unowned self] in
            self.feed.tick()
            if self.manualClock == nil { self.decideDue(through: self.host.time.now(), mode: .running) }
        }
    }

    // MARK: Ops

    private func registerOps() {
        host.handle(Ops.userPut, .alone) { [unowned self] input, tx in
            let user = UserSettings(userId: input.userId, timeZone: input.timeZone, locale: input.locale,
                                    paused: input.paused ?? users[input.userId]?.paused ?? false)
            try PlannerStore.save(user, tx.db)
            for id in remindersByUser[user.userId] ?? [] {
                if let reminder = reminders[id] { try reevaluate(reminder, zone: user.timeZone, in: tx) }
            }
            try persistDecidedThrough(tx)
            tx.afterCommit { [unowned self] in
                users[user.userId] = user
                for id in remindersByUser[user.userId] ?? [] { if let reminder = reminders[id] { scheduler.schedule(reminder, zone: user.timeZone, from: firstPending(reminder)) } }
            }
            return user
        }
        host.handle(Ops.userGet) { [unowned self] query, _ in user(query.userId) }
        host.handle(Ops.reminderPut, .alone) { [unowned self] input, tx in try putReminder(input, tx) }
        host.handle(Ops.reminderGet) { [unowned self] query, _ in try reminder(query.id, field: "data.id") }
        host.handle(Ops.reminderList) { [unowned self] query, _ in
            let list = (remindersByUser[query.userId] ?? []).compactMap { reminders[$0] }.sorted { ($0.time, $0.id) < ($1.time, $1.id) }
            return ReminderListReply(reminders: list)
        }
        host.handle(Ops.reminderDelete, .alone) { [unowned self] query, tx in
            let reminder = try reminder(query.id, field: "data.id")
            try PlannerStore.delete(reminder: reminder.id, tx.db)
            let deleted = ReminderDeleted(id: reminder.id, userId: reminder.userId, activity: reminder.activity)
            try tx.append(Events.reminderChanged, userId: reminder.userId, activity: reminder.activity, data: .deleted(deleted))
            try persistDecidedThrough(tx)
            tx.afterCommit { [unowned self] in forget(reminder.id) }
            return deleted
        }
        host.handle(Ops.reminderUpcoming) { [unowned self] query, tx in try UpcomingReply(occurrences: upcoming(query, tx.db)) }
        host.handle(Ops.reminderRestore, .alone) { [unowned self] input, tx in try restore(input, tx) }
        host.handle(Ops.reminderTest, .alone) { [unowned self] input, tx in
            try fireTest(reminder(input.reminderId, field: "data.reminderId"), tx)
        }
        host.handle(Ops.clockGet) { [unowned self] _, _ in ClockReply(now: host.time.now(), decided: nil) }
        host.handleOutside(Ops.clockSet) { [unowned self] input in try moveClock(Ops.clockSet.name, to: input.now) }
        host.handleOutside(Ops.clockAdvance) { [unowned self] input in
            try moveClock(Ops.clockAdvance.name, to: host.time.now().adding(seconds: input.seconds))
        }
    }

    private func user(_ id: UserID) -> UserSettings {
        users[id] ?? UserSettings(userId: id, timeZone: settings.defaultZone, locale: .en, paused: false)
    }

    private func reminder(_ id: RecordID, field: String) throws(WireError) -> Reminder {
        guard let reminder = reminders[id] else { throw WireError(.notFound, "no reminder \(id)", field: field) }
        return reminder
    }

    private func putReminder(_ input: ReminderPutRequest, _ tx: Transaction) throws -> ReminderPutReply {
        let existing = input.id.flatMap { reminders[$0] }
        if let existing, existing.userId != input.userId {
            throw WireError(.conflict, "reminder \(existing.id) belongs to another user", field: "data.userId")
        }
        let weekdays = input.weekdays ?? Weekday.allCases
        var warnings: [String]?
        if weekdays.isEmpty { warnings = ["weekdays is empty: the reminder is stored disabled"] }
        let reminder = Reminder(
            id: input.id ?? RecordID(), userId: input.userId, activity: input.activity,
            time: input.time ?? Reminder.defaultTime(for: input.activity), weekdays: weekdays,
            lookbackHours: input.lookbackHours ?? Reminder.defaultLookbackHours(for: input.activity),
            enabled: weekdays.isEmpty ? false : input.enabled ?? true, title: input.title, body: input.body,
            createdAt: existing?.createdAt ?? tx.now)
        try PlannerStore.save(reminder, tx.db)
        try tx.append(Events.reminderChanged, userId: reminder.userId, activity: reminder.activity, data: .put(reminder))
        try reevaluate(reminder, zone: user(reminder.userId).timeZone, in: tx)
        try persistDecidedThrough(tx)
        tx.afterCommit { [unowned self] in
            if let existing { forget(existing.id) }
            remember(reminder)
            scheduler.schedule(reminder, zone: user(reminder.userId).timeZone, from: firstPending(reminder))
        }
        return ReminderPutReply(reminder: reminder, warnings: warnings)
    }

    private func restore(_ input: RestoreRequest, _ tx: Transaction) throws -> Occurrence {
        let reminder = try reminder(input.reminderId, field: "data.reminderId")
        let zone = user(reminder.userId).timeZone
        guard reminder.enabled, input.at >= reminder.createdAt,
              let planned = OccurrenceCalendar.occurrence(exactlyAt: input.at, time: reminder.time, on: reminder.weekdays, in: zone.timeZone)
        else { throw WireError(.notFound, "\(input.at) is not an occurrence of reminder \(reminder.id)", field: "data.at") }
        let decided = try PlannerStore.decisions(of: reminder.id, from: planned.at, through: planned.at, tx.db)
        guard decided.isEmpty, planned.at >= firstPending(reminder) else {
            throw WireError(.conflict, "the occurrence at \(planned.at) is decided already", field: "data.at")
        }
        try PlannerStore.restore(reminder.id, at: planned.at, tx.db)
        tx.afterCommit { [unowned self] in restored.insert(OccurrenceKey(reminder: reminder.id, at: planned.at)) }
        let occurrence = makeOccurrence(reminder, planned, status: .scheduled, cause: nil)
        try tx.append(Events.reminderRestored, userId: reminder.userId, activity: reminder.activity, data: occurrence)
        return occurrence
    }

    /// `reminder.test`: a `reminder.due` with `test:true` now, whatever the rule, coverage or pause.
    private func fireTest(_ reminder: Reminder, _ tx: Transaction) throws -> Occurrence {
        let settings = user(reminder.userId)
        let local = tx.now.local(in: settings.timeZone.timeZone)
        let planned = PlannedOccurrence(day: local.day, weekday: local.day.weekday, at: tx.now,
                                        localTime: LocalTime(hour: local.minuteOfDay / 60, minute: local.minuteOfDay % 60)!)
        let occurrence = makeOccurrence(reminder, planned, status: .fired, cause: nil)
        try tx.append(Events.reminderDue, userId: reminder.userId, activity: reminder.activity,
                      data: DueOccurrence(occurrence: occurrence, timeZone: settings.timeZone, locale: settings.locale,
                                          title: reminder.title, body: reminder.body, late: false, test: true))
        return occurrence
    }

    private func moveClock(_ op: String, to now: Instant) throws -> ClockReply {
        guard let manualClock else {
            throw WireError.invalid("op", "\(op) needs --clock manual:<instant>; this planner runs on the system clock")
        }
        let previous = manualClock.current
        guard now >= previous else { throw WireError.invalid("data.now", "the clock only moves forward") }
        // Sessions logged just before the move count: catch up first (fail-safe if the logger is silent).
        feed.catchUp()
        manualClock.current = now
        do {
            // The new time is stored with the decisions it caused, so a crash cannot separate them.
            let decided = try decideOrThrow(through: now, mode: .running) { tx in
                try PlannerStore.setValue("manualNowMs", now.millisecondsSince1970, tx.db)
            }
            return ClockReply(now: now, decided: decided)
        } catch {
            manualClock.current = previous
            recoverFromFailedDecisions(error)
            throw WireError(.internal, "deciding up to \(now) failed; the clock stays at \(previous)")
        }
    }

    // MARK: Occurrences

    private func makeOccurrence(_ reminder: Reminder, _ planned: PlannedOccurrence, status: OccurrenceStatus, cause: RecordID?) -> Occurrence {
        let isNoAlc = reminder.activity == .noalc
        return Occurrence(
            reminderId: reminder.id, userId: reminder.userId, activity: reminder.activity, at: planned.at, localTime: planned.localTime,
            day: planned.day, weekday: planned.weekday,
            windowStart: isNoAlc ? nil : Coverage.windowStart(of: planned.at, lookbackHours: reminder.lookbackHours),
            status: status, cause: cause,
            targetDay: isNoAlc ? Coverage.noalcTargetDay(ruleDay: planned.day, ruleTime: reminder.time) : nil)
    }

    /// What covers the occurrence, if anything: a session overlapping its window, or an entry for its target day.
    private func cause(covering planned: PlannedOccurrence, of reminder: Reminder, _ db: Database) throws -> RecordID? {
        if reminder.activity == .noalc {
            return try PlannerStore.noalcEntry(user: reminder.userId, day: Coverage.noalcTargetDay(ruleDay: planned.day, ruleTime: reminder.time), db)
        }
        return try PlannerStore.coveringSession(of: reminder, at: planned.at, db)
    }

    /// Undecided occurrences of `reminder` that something already logged could cover: sessions
    /// start at most 5 minutes ahead and last at most a day, windows at most 48 h; NoAlc entries
    /// may name any day, so a month ahead (the longest `reminder.upcoming`) is looked at.
    private func coverableOccurrences(of reminder: Reminder, zone: ZoneID) -> [PlannedOccurrence] {
        guard reminder.enabled, !reminder.weekdays.isEmpty else { return [] }
        return OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.timeZone,
                                              from: firstPending(reminder), through: coverageHorizon(of: reminder))
    }

    private func coverageHorizon(of reminder: Reminder) -> Instant {
        host.time.now().adding(seconds: (reminder.activity == .noalc ? 32 * 24 : 24 + 48 + 1) * 3600)
    }

    /// The earliest instant an undecided occurrence of `reminder` can have: just after everything
    /// decided, or its creation instant if that is later (an occurrence exactly then exists too).
    private func firstPending(_ reminder: Reminder) -> Instant {
        reminder.createdAt >= decidedThrough ? reminder.createdAt : decidedThrough.adding(milliseconds: 1)
    }

    /// Announces `reminder.cancelled` once for each undecided occurrence that became covered.
    /// Announcements come before T: one whose T has passed (the planner was down) is decided instead.
    private func announceCancellations(_ reminder: Reminder, _ candidates: [PlannedOccurrence], in tx: Transaction) throws {
        let pending = firstPending(reminder), now = host.time.now()
        for planned in candidates where planned.at >= pending && planned.at > now {
            guard !restored.contains(OccurrenceKey(reminder: reminder.id, at: planned.at)),
                  let cause = try cause(covering: planned, of: reminder, tx.db),
                  try PlannerStore.announce(reminder.id, at: planned.at, cause: cause, tx.db) else { continue }
            try tx.append(Events.reminderCancelled, userId: reminder.userId, activity: reminder.activity,
                          data: makeOccurrence(reminder, planned, status: .cancelled, cause: cause))
        }
    }

    /// After a put or a zone change: announce what is newly covered, withdraw what no longer is.
    private func reevaluate(_ reminder: Reminder, zone: ZoneID, in tx: Transaction) throws {
        let candidates = coverableOccurrences(of: reminder, zone: zone)
        let current = Set(candidates.map(\.at.millisecondsSince1970))
        // Beyond the horizon nothing was re-examined, so what was announced there stands.
        let horizon = reminder.enabled ? coverageHorizon(of: reminder).millisecondsSince1970 : .max
        for at in try PlannerStore.announced(of: reminder.id, tx.db).keys where !current.contains(at) && at <= horizon {
            try PlannerStore.withdrawAnnouncement(reminder.id, at: at, tx.db)
        }
        try announceCancellations(reminder, candidates, in: tx)
    }

    private func upcoming(_ query: UpcomingRequest, _ db: Database) throws -> [Occurrence] {
        let zone = user(query.userId).timeZone
        let today = host.time.now().local(in: zone.timeZone).day
        var result: [Occurrence] = []
        for reminder in (remindersByUser[query.userId] ?? []).compactMap({ reminders[$0] }) where reminder.enabled {
            let planned = OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.timeZone,
                                                         days: today...today.adding(days: query.days - 1))
                .filter { $0.at >= reminder.createdAt }
            guard let first = planned.first, let last = planned.last else { continue }
            let decisions = try PlannerStore.decisions(of: reminder.id, from: first.at, through: last.at, db)
            for occurrence in planned {
                if let decided = decisions[occurrence.at.millisecondsSince1970] {
                    result.append(makeOccurrence(reminder, occurrence, status: decided.status, cause: decided.cause))
                } else if occurrence.at >= firstPending(reminder) {
                    let restored = restored.contains(OccurrenceKey(reminder: reminder.id, at: occurrence.at))
                    let cause = restored ? nil : try cause(covering: occurrence, of: reminder, db)
                    result.append(makeOccurrence(reminder, occurrence, status: cause == nil ? .scheduled : .cancelled, cause: cause))
                }
                // Undecided and already past: the reminder was edited after its instant; it never existed.
            }
        }
        return result.sorted { ($0.at, $0.reminderId) < ($1.at, $1.reminderId) }
    }

    // MARK: Deciding

    /// Decides everything due up to `now`; a failure is logged and retried on a later turn.
    private func decideDue(through now: Instant, mode: DecisionMode) {
        do {
            try decideOrThrow(through: now, mode: mode)
        } catch {
            recoverFromFailedDecisions(error)
        }
    }

    /// Decides every occurrence due up to `now`, in time order, in one transaction that also runs
    /// `alongside`. Returns how many were decided.
    @discardableResult
    private func decideOrThrow(through now: Instant, mode: DecisionMode, alongside: ((Transaction) throws -> Void)? = nil) throws -> Int {
        let due = scheduler.nextInstant.map { $0 <= now } ?? false
        guard due || alongside != nil else {
            decidedThrough = max(decidedThrough, now)
            return 0
        }
        // A known gap in our copy of the session log: ask for it first. If the logger does not answer
        // within 2 s, decide with what we know; missing sessions only mean fewer suppressions (fail-safe).
        if due, mode == .running, feed.upstreamSeq > feed.appliedSeq { feed.catchUp() }
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
    private func recoverFromFailedDecisions(_ error: Error) {
        host.logger.error("deciding failed; will retry", metadata: ["error": "\(error)"])
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

    private func persistDecidedThrough(_ tx: Transaction) throws {
        try PlannerStore.setValue("decidedThroughMs", decidedThrough.millisecondsSince1970, tx.db)
    }

    // MARK: Upstream

    /// Applies one session-logger event: store what covers occurrences and announce what it cancels.
    private func apply(_ event: ReceivedEvent, _ tx: Transaction) throws {
        switch event.data {
        case .sessionLogged(let session):
            guard try PlannerStore.insert(session: session, seq: event.seq, tx.db) else { return }
            tx.afterCommit { [unowned self] in host.count("sessionsApplied") }
            let zone = user(session.userId).timeZone
            for reminder in reminders(of: session.userId, activity: session.activity) {
                let latest = session.end.adding(seconds: Int64(reminder.lookbackHours) * 3600)
                let candidates = OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.timeZone,
                                                                from: max(session.start, firstPending(reminder)), through: latest)
                try announceCancellations(reminder, candidates, in: tx)
            }
        case .noalcLogged(let entry):
            guard try PlannerStore.insert(noalcDay: entry.day, user: entry.userId, entry: entry.id, tx.db) else { return }
            tx.afterCommit { [unowned self] in host.count("noalcDaysApplied") }
            let zone = user(entry.userId).timeZone
            for reminder in reminders(of: entry.userId, activity: .noalc) {
                // The entry's day is the target day of an occurrence on that day (evening rule) or the next (morning rule).
                let ruleDay = reminder.time >= Coverage.noalcEveningStart ? entry.day : entry.day.adding(days: 1)
                let candidates = OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: zone.timeZone, days: ruleDay...ruleDay)
                try announceCancellations(reminder, candidates, in: tx)
            }
        default:
            return
        }
    }

    private func reminders(of user: UserID, activity: Activity) -> [Reminder] {
        (remindersByUser[user] ?? []).compactMap { reminders[$0] }.filter { $0.activity == activity && $0.enabled }
    }

    // MARK: Memory

    private func remember(_ reminder: Reminder) {
        reminders[reminder.id] = reminder
        remindersByUser[reminder.userId, default: []].append(reminder.id)
    }

    private func forget(_ id: RecordID) {
        if let reminder = reminders.removeValue(forKey: id) { remindersByUser[reminder.userId]?.removeAll { $0 == id } }
        restored = restored.filter { $0.reminder != id }
        scheduler.unschedule(id)
    }

    private func rebuildSchedule() {
        scheduler = Scheduler()
        for reminder in reminders.values { scheduler.schedule(reminder, zone: user(reminder.userId).timeZone, from: firstPending(reminder)) }
    }
}
