import Foundation
import LHTSchema
import Logging
import ReminderPlanning
import ServiceHost
import Storage
import ZeroMQ
import ZoneRules

/// Keeps reminders, computes their occurrences in each user's zone, announces cancellations as
/// soon as activity covers an occurrence, and decides every occurrence exactly once at its instant.
///
/// Users and reminders live in memory (changed after commit, by ops that run alone); everything
/// coverage depends on is read from the store inside the deciding transaction, so a decision always
/// sees what was stored before it. On PostgreSQL every instance keeps every user in memory, brought
/// up to what the others committed at the start of each transaction, and decides for the
/// partitions of users it holds leases on (`ReminderPlanner+Instances`).
public final class ReminderPlanner: Service {
    public let host: ServiceHost
    let settings: PlannerSettings
    let manualClock: ManualTime?
    private(set) var feed: UpstreamFeed!
    var scheduler = Scheduler()
    /// The reminders, and their users' settings.
    private(set) var reminders = ReminderTable()
    /// How far each partition's occurrences are decided.
    var decidedThrough: DecidedThrough
    /// Where decisions are applied behind the log: what is decided of the instant after `decidedThrough`.
    var partlyDecided: PartlyDecidedInstant
    /// Occurrences at or before this instant fell due while no instance of the planner was deciding
    /// them for their user (this one was down, or another owned them): decided by the grace window.
    var backlogThrough: Instant
    /// The instances sharing the store: what this one's memory holds of their changes
    /// (`followOtherInstances`), and when it next balances the partitions.
    var cluster = ClusterState()
    /// Occurrences the user restored (few; read for every decision, so kept in memory too).
    var restored: Set<OccurrenceKey> = []
    /// A `clock.set`/`clock.advance` is moving the clock step by step (and serving requests between steps).
    var movingClock = false
    /// The most occurrences a step of a clock move decides (`decideStep`); a test makes it small, so
    /// that a step stops within an instant.
    var clockStepOccurrences = 2_000
    var tzdataWatch: TZDataWatch
    /// Users to plan again after a tzdata update (`followTZData`).
    var replanning = Replanning()
    /// Each reminder's last decided rule day whose instant a tzdata update moved past the decided
    /// ones: that day is not decided again (`followTZData` forgets it once the new instant passed).
    /// Stored as well (`moved_decided_day`), so it outlives a restart; this copy spares decisions a query.
    var movedDecidedDays: [RecordID: MovedDecidedDay] = [:]
    /// When timed work whose transaction failed (deciding, planning again) tries again.
    var storeRetry = StoreRetry()

    public init(settings: PlannerSettings, logger: Logger, context: Context? = nil) throws {
        self.settings = settings
        tzdataWatch = TZDataWatch(seconds: settings.tzdataCheckSeconds)
        let time: TimeSource
        if case .manual(let start) = settings.clock {
            manualClock = ManualTime(start)
            time = manualClock!
        } else {
            manualClock = nil
            time = SystemTime()
        }
        host = try ServiceHost(settings: settings.service, layout: PlannerStore.layout, logger: logger, time: time, context: context)
        if let manualClock {
            // A restart never moves a manual clock backwards, whatever the flag says.
            let stored = try host.query { try PlannerStore.value("manualNowMs", $0) }
            manualClock.current = max(manualClock.current, Instant(millisecondsSince1970: stored ?? .min))
            try host.write { tx in try PlannerStore.setValue("manualNowMs", manualClock.current.millisecondsSince1970, tx.sql) }
        }
        // A fresh planner has nothing to catch up on: occurrences exist from now on.
        let now = time.now()
        try host.write { tx in try PlannerStore.startDecidedThrough(at: now, tx.sql) }
        let stored = try host.query { sql in
            (users: try PlannerStore.users(sql), reminderCount: try PlannerStore.reminderCount(sql),
             decidedThrough: try PlannerStore.decidedThrough(sql), memoryVersion: try PlannerStore.value("memoryVersion", sql),
             restored: try PlannerStore.restoredOccurrences(sql), moved: try PlannerStore.movedDecidedDays(sql))
        }
        // The partitions owned from the start (all, unless other instances share the store) are
        // scheduled from where they are decided; the others from now, until this one takes them.
        decidedThrough = DecidedThrough(now)
        for partition in host.store.ownedPartitions { decidedThrough[partition] = stored.decidedThrough[partition] ?? now }
        partlyDecided = PartlyDecidedInstant(after: decidedThrough.oldest)
        backlogThrough = now
        cluster.memoryVersion = stored.memoryVersion ?? 0
        restored = stored.restored
        movedDecidedDays = stored.moved
        try loadReminders(expecting: stored.reminderCount, users: stored.users)
        if latestLoggedIsKnown {
            try host.query { sql in
                try PlannerStore.forEachLatestSessionEnd(sql) { user, activity, end in
                    reminders.noteLogged(by: user) { $0.logged(sessionOf: activity, endingAt: end) }
                }
            }
        }

        feed = try UpstreamFeed(upstream: .sessionLogger, host: host, eventsEndpoints: settings.sessionLoggerEvents,
                                apiEndpoints: settings.sessionLoggerAPI) { [unowned self] event, tx in
            try self.apply(event, tx)
        }
        registerOps()
        host.count("sessionsApplied", by: 0)
        host.count("noalcEntriesApplied", by: 0)
        for status in [OccurrenceStatus.fired, .suppressed, .skipped, .missed] { host.countMetric("decisions", "kind", Self.decisionKind(status), by: 0) }
        feed.catchUp()
        decideDue(through: time.now())
        if host.store.isShared {
            // Its write hook follows the other instances from here on, in the balance's writes too.
            host.attach(self)
            readMemoryVersionUnderLock()
            _ = host.store.expectInUpstreamWrites()
            // Ready with its share taken, and what fell due in it decided.
            balancePartitions()
        }
    }

    /// The user's settings; a user never set has the default zone, English and no pause.
    func user(_ id: UserID) -> UserSettings { settingsOrDefault(reminders.settings(of: id), id) }

    /// The reminder in `row` with its user's settings and latest session ends (where known),
    /// found by the row, for the deciding loop (which prefetches what the next decisions read: `ReminderTable.deciding`).
    func reminderAndUser(inRow row: Scheduler.Row) -> (reminder: Reminder, user: UserSettings, latest: LatestLogged?) {
        let upcoming = scheduler.upcomingRows
        let (reminder, stored, latest) = reminders.deciding(row, next: upcoming.next, after: upcoming.after)
        return (reminder, settingsOrDefault(stored, reminder.userId), latestLoggedIsKnown ? latest : nil)
    }

    /// `user`'s latest session ends, where this process knows them.
    func latestLogged(by user: UserID) -> LatestLogged? { latestLoggedIsKnown ? reminders.latestLogged(by: user) : nil }

    /// `LatestLogged` holds only while this process alone writes the copies of sessions: not on a shared store.
    var latestLoggedIsKnown: Bool { !host.store.isShared }

    /// Raises `user`'s latest session ends: with every session stored, before coverage is asked.
    func noteLogged(by user: UserID, _ update: (inout LatestLogged) -> Void) {
        if latestLoggedIsKnown { reminders.noteLogged(by: user, update) }
    }

    private func settingsOrDefault(_ stored: UserSettings?, _ id: UserID) -> UserSettings {
        stored ?? UserSettings(userId: id, timeZone: settings.defaultZone, locale: .en, paused: false)
    }

    // MARK: Memory

    /// Puts `new` in memory in place of reminder `id` (nil: deletes it, with its restored
    /// occurrences) and schedules it, at once; undone if `tx` rolls back.
    func replaceReminder(_ id: RecordID, with new: Reminder?, in tx: Transaction) throws {
        let old = reminders[id]
        try noteChanged((new ?? old)?.userId, tx)
        let oldRestored = new == nil ? restored.filter { $0.reminder == id } : []
        setReminder(id, new)
        restored.subtract(oldRestored)
        tx.onRollback { [unowned self] in
            setReminder(id, old)
            restored.formUnion(oldRestored)
        }
    }

    /// The scheduler knows reminders by their table rows: a row leaves the schedule before the
    /// table can give it to another reminder.
    func setReminder(_ id: RecordID, _ reminder: Reminder?) {
        let oldRow = reminders.remove(id)
        guard let reminder else {
            if let oldRow { scheduler.unschedule(oldRow) }
            return
        }
        let row = reminders.insert(reminder)
        if let oldRow, oldRow != row { scheduler.unschedule(oldRow) }
        scheduler.schedule(reminder, row: row, zone: user(reminder.userId).timeZone, from: firstPending(reminder))
    }

    /// Makes `settings` the user's, rescheduling its reminders in its zone, at once; undone if `tx` rolls back.
    func replaceUser(_ settings: UserSettings, in tx: Transaction) throws {
        let old = reminders.settings(of: settings.userId)
        try noteChanged(settings.userId, tx)
        setUser(settings.userId, settings)
        tx.onRollback { [unowned self] in setUser(settings.userId, old) }
    }

    func setUser(_ id: UserID, _ settings: UserSettings?) {
        reminders.setSettings(settings, of: id)
        scheduleReminders(of: id)
    }

    /// Schedules the user's reminders again, in its zone, from where its partition is decided.
    func scheduleReminders(of id: UserID) {
        let zone = user(id).timeZone
        for (row, reminder) in reminders.rows(ownedBy: id) {
            scheduler.schedule(reminder, row: row, zone: zone, from: firstPending(reminder))
        }
    }

    /// Streams the stored reminders into the table (sized up front) on this thread and into the
    /// schedule on one of its own, as they are read: filling either took as long as reading the rows,
    /// so the three overlap, and a million reminders never exist as one intermediate array. Both are
    /// filled as local values, which spares a million checks of exclusive access to the planner's properties.
    private func loadReminders(expecting count: Int, users: [UserSettings]) throws {
        var table = ReminderTable()
        table.reserveCapacity(count)
        let batches = HandOff<[StoredReminder]>(waitingLimit: 8)
        let schedule = Self.schedule(batches, expecting: count, users: Dictionary(users.map { ($0.userId, $0) }) { $1 },
                                     defaultZone: settings.defaultZone, decidedThrough: decidedThrough)
        do {
            try PlannerStore.streamReminders(from: host.store) { batch in
                batches.put(batch)
                // By index: a for-in loop copies each element out (retaining its strings) and destroys it after.
                for index in batch.indices {
                    let row = table.insert(batch[index].fields, title: batch[index].title, body: batch[index].body)
                    // The scheduling thread numbers the reminders as they come: the table must agree.
                    precondition(Int(row) == table.count - 1, "loading fills an empty table in order")
                }
            }
            batches.finish(.success(()))
        } catch {
            batches.finish(.failure(error))
            _ = try? schedule.take()
            throw error
        }
        // After the reminders: loading interns their users in order, one after another, without hashing.
        for user in users { table.setSettings(user, of: user.userId) }
        reminders = table
        scheduler = try schedule.take()!.scheduler
    }

    /// The scheduler built from `batches` on a thread of its own, handed over once they end.
    private static func schedule(_ batches: HandOff<[StoredReminder]>, expecting count: Int, users: [UserID: UserSettings],
                                 defaultZone: ZoneID, decidedThrough: DecidedThrough) -> HandOff<BuiltScheduler> {
        let built = HandOff<BuiltScheduler>(waitingLimit: 1)
        // A thread of its own, as the reader's (streamReminders): it blocks while loading lasts.
        let scheduling = Thread {
            built.finish(Result {
                var scheduler = Scheduler()
                // A user's reminders mostly come one after another: their zone is looked up once for them.
                var zone: (user: UserID, zone: ZoneID, decidedThrough: Instant)?
                // The table, filled from the same batches on the loop thread, gives the n-th reminder row n.
                var row: Scheduler.Row = 0
                try scheduler.scheduleAll(expecting: count) { add in
                    while let batch = try batches.take() {
                        for index in batch.indices {
                            let fields = batch[index].fields
                            if zone?.user != fields.userId {
                                zone = (fields.userId, users[fields.userId]?.timeZone ?? defaultZone, decidedThrough[fields.userId])
                            }
                            add(Scheduler.Rule(id: fields.id, time: fields.rule.time, weekdays: fields.rule.weekdays, enabled: fields.rule.enabled), row, zone!.zone,
                                firstPending(createdAt: Instant(millisecondsSince1970: fields.createdAt), decidedThrough: zone!.decidedThrough))
                            row += 1
                        }
                    }
                }
                built.put(BuiltScheduler(scheduler: scheduler))
            })
        }
        scheduling.name = "reminder-scheduling"
        scheduling.start()
        return built
    }

    func rebuildSchedule() {
        scheduler = Scheduler()
        scheduler.scheduleAll(expecting: reminders.count) { schedule in
            reminders.forEachUser { userId, rules in
                let zone = user(userId).timeZone, decided = decidedThrough[userId]
                for (rule, row, createdAt) in rules { schedule(rule, row, zone, Self.firstPending(createdAt: createdAt, decidedThrough: decided)) }
            }
        }
    }
}

/// Timed work whose transaction failed tries again a second later, not on every turn of the loop:
/// a database that is down (PostgreSQL away) is not asked in a tight loop meanwhile.
struct StoreRetry {
    static let pauseNanoseconds: UInt64 = 1_000_000_000
    private var notBefore: UInt64 = 0

    var isDue: Bool { DispatchTime.now().uptimeNanoseconds >= notBefore }

    var millisecondsLeft: Int64 {
        let now = DispatchTime.now().uptimeNanoseconds
        return notBefore > now ? Int64((notBefore - now) / 1_000_000) + 1 : 0
    }

    mutating func failed() { notBefore = DispatchTime.now().uptimeNanoseconds + Self.pauseNanoseconds }
}

/// A scheduler passed from the thread that built it to the loop, which alone uses it from then on.
private struct BuiltScheduler: @unchecked Sendable {
    let scheduler: Scheduler
}
