import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage
import ZoneRules

// A tzdata update while running (PROTOCOL.md "Zone rules (tzdata)"). Every computation asks the
// zone's current rules, so requests follow new ones at once; what was planned ahead with the old
// ones — each reminder's next occurrence in the schedule, announced cancellations — is planned
// again here, user by user, in committed steps between requests.
extension ReminderPlanner {
    /// The rules its answers depend on, named in `health`.
    public var tzdataVersion: String? { TZData.system.version }

    /// Users still to plan again, in order, each with its zone and the rules the zone had before.
    struct Replanning {
        /// `takenOver`: queued when this instance took the user's partition over, not at the update.
        var queue: [(user: UserID, zone: String, before: ZoneRules, takenOver: Bool)] = []
        var next = 0
        /// Users in the queue not planned yet: a second update finds them waiting.
        var queued: Set<UserID> = []
        /// Whether occurrences moved, by rule: most reminders share their zone, time and start.
        var moved: [MovedKey: Bool] = [:]
        /// The zones whose rules changed while this process ran, with the rules they had first: a
        /// partition taken over later is planned again for them too, since its last owner may
        /// never have (other tzdata on its host, or it died first).
        var changedZones: [String: ZoneRules] = [:]

        var isDone: Bool { next == queue.count }
    }

    struct MovedKey: Hashable {
        let before: ObjectIdentifier, now: ObjectIdentifier
        let minute: Int, weekdays: UInt8, from: Int64
    }

    /// How far ahead a moved occurrence gets its reminder a `reminder.changed`: a year shows every
    /// seasonal rule, and tzdata announces changes months ahead.
    static let movedHorizonSeconds: Int64 = 366 * 86_400
    /// Work per step; its commit costs about as much again (as `clockStepNanoseconds`).
    static let replanStepNanoseconds: UInt64 = 10_000_000

    /// The loop's turn: look for a tzdata update when due, then plan the next users again.
    func followTZData() {
        if let refresh = tzdataWatch.check(logger: host.logger) { queueUsers(after: refresh) }
        guard storeRetry.isDue else { return }
        if !replanning.isDone { replanStep() }
        forgetPassedMovedDays()
    }

    /// Forgets the moved decided days whose new instant is decided: a transaction of its own, once
    /// for those an update moved, that stores `decidedThrough` too, so a restart starts past them.
    private func forgetPassedMovedDays() {
        let through = decidedThrough.oldest
        guard movedDecidedDays.values.contains(where: { $0.until <= through }) else { return }
        do {
            try host.write { tx in
                try PlannerStore.forgetMovedDecidedDays(through: through, tx.sql)
                try persistDecidedThrough(tx)
                tx.afterCommit { [unowned self] in movedDecidedDays = movedDecidedDays.filter { $0.value.until > through } }
            }
        } catch {
            host.recordError("forgetting passed moved days failed; will retry", ["error": "\(error)"])
            storeRetry.failed()
        }
    }

    /// Forgets the reminder's moved decided day, stored and in memory (back if `tx` rolls back): once
    /// deleted, or given another time or weekdays, its days are new ones.
    func forgetMovedDecidedDay(of id: RecordID, _ tx: Transaction) throws {
        // Every stored day is in memory: most puts and deletes need no statement.
        guard let moved = movedDecidedDays[id] else { return }
        try PlannerStore.forgetMovedDecidedDay(of: id, tx.sql)
        movedDecidedDays[id] = nil
        tx.onRollback { [unowned self] in movedDecidedDays[id] = moved }
    }

    /// Every user with settings or reminders, by zone name.
    private func usersByZone() -> [String: [UserID]] {
        Dictionary(grouping: reminders.users) { user($0).timeZone.identifier }
    }

    private func queueUsers(after refresh: TZData.Refresh) {
        let owners = usersByZone()
        for (zone, reason) in refresh.lost {
            // A lost zone is reported once (until its file comes back): so each of its users is logged once.
            for user in owners[zone] ?? [] {
                host.logger.warning("the zone is gone from tzdata; its last rules stay in use",
                                    metadata: ["zone": "\(zone)", "userId": "\(user)", "reason": "\(reason)"])
            }
        }
        if replanning.isDone { replanning = Replanning(changedZones: replanning.changedZones) }
        for (zone, rules) in refresh.changed where replanning.changedZones[zone] == nil { replanning.changedZones[zone] = rules.before }
        // Rules are told apart by identity: forget the answers about ones that may be gone.
        if !refresh.changed.isEmpty { replanning.moved = [:] }
        // Each instance plans again the users it decides for (what it announces is time-driven work).
        for (zone, rules) in refresh.changed.sorted(by: { $0.key < $1.key }) {
            for user in owners[zone] ?? [] where host.store.ownedPartitions.contains(user) && replanning.queued.insert(user).inserted {
                replanning.queue.append((user, zone, rules.before, false))
            }
        }
    }

    /// Queues the users of partitions just taken over whose zone changed while this process ran.
    func replanTakenOver(_ taken: PartitionSet) {
        guard !replanning.changedZones.isEmpty else { return }
        if replanning.isDone { replanning = Replanning(changedZones: replanning.changedZones) }
        for (zone, users) in usersByZone().sorted(by: { $0.key < $1.key }) {
            guard let before = replanning.changedZones[zone] else { continue }
            for user in users where taken.contains(Ownership.partition(of: user)) && replanning.queued.insert(user).inserted {
                replanning.queue.append((user, zone, before, true))
            }
        }
    }

    /// Plans users again for at most `replanStepNanoseconds` of work, in one transaction.
    private func replanStep() {
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            try host.write { tx in
                var next = replanning.next
                while next < replanning.queue.count,
                      next == replanning.next || DispatchTime.now().uptimeNanoseconds - started < Self.replanStepNanoseconds {
                    let (userId, zone, before, takenOver) = replanning.queue[next]
                    // A user who changed zone meanwhile was planned in the new one by `user.put`.
                    if user(userId).timeZone.identifier == zone { try replan(userId, before: before, takenOver: takenOver, tx) }
                    next += 1
                }
                tx.afterCommit { [unowned self] in
                    for done in replanning.queue[replanning.next..<next] { replanning.queued.remove(done.user) }
                    replanning.next = next
                }
            }
        } catch {
            host.recordError("planning again after a tzdata update failed; will retry", ["error": "\(error)"])
            storeRetry.failed()
        }
    }

    /// The user's reminders after new zone rules: a `reminder.changed` for each whose undecided
    /// occurrences moved, announcements withdrawn and made as coverage now says, and the schedule
    /// at the next occurrence by the new rules. A rule day decided by the old rules whose instant
    /// the new ones put later stays decided (`movedDecidedDays`, stored in this step's transaction).
    /// For a user taken over, which rules its last owner decided by is not known here: the stored
    /// decisions keep each rule day decided once instead (`PlannerStore.decideOnce`).
    private func replan(_ userId: UserID, before: ZoneRules, takenOver: Bool, _ tx: Transaction) throws {
        let zone = user(userId).timeZone
        for (row, reminder) in reminders.rows(ownedBy: userId) {
            if occurrencesMoved(reminder, before: before, now: zone.rules) {
                try tx.append(Events.reminderChanged, userId: reminder.userId, activity: reminder.activity,
                              encodedData: try WireJSON.encode(ReminderChange.put(reminder)))
            }
            try reevaluate(reminder, zone: zone, in: tx)
            let moved = takenOver ? nil : movedDecidedDay(reminder, before: before, now: zone.rules)
            if let moved {
                try PlannerStore.save(moved, of: reminder.id, tx.sql)
                try noteChanged(userId, tx)
            }
            tx.afterCommit { [unowned self] in
                if let moved { movedDecidedDays[reminder.id] = moved }
                scheduler.schedule(reminder, row: row, zone: zone, from: firstPending(reminder))
            }
        }
    }

    /// The reminder's last decided rule day, if the new rules put it after everything decided,
    /// with its new instant.
    private func movedDecidedDay(_ reminder: Reminder, before: ZoneRules, now: ZoneRules) -> MovedDecidedDay? {
        let decidedThrough = decidedThrough[reminder.userId]
        // A selected weekday comes round within a week.
        let decided = OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: before,
                                                     from: max(reminder.createdAt, decidedThrough.adding(seconds: -8 * 86_400)),
                                                     through: decidedThrough)
        // A day an earlier update moved is decided too, though the old rules put it after the clock.
        guard reminder.enabled, let last = [decided.last?.day, movedDecidedDays[reminder.id]?.day].compactMap({ $0 }).max(),
              let moved = OccurrenceCalendar.occurrence(on: last, at: reminder.time, in: now), moved.at > decidedThrough else { return nil }
        return MovedDecidedDay(day: last, until: moved.at)
    }

    private func occurrencesMoved(_ reminder: Reminder, before: ZoneRules, now: ZoneRules) -> Bool {
        guard reminder.enabled else { return false }
        let from = firstPending(reminder), through = from.adding(seconds: Self.movedHorizonSeconds)
        let key = MovedKey(before: ObjectIdentifier(before), now: ObjectIdentifier(now), minute: reminder.time.minutesSinceMidnight,
                           weekdays: WeekdayMask(reminder.weekdays).bits, from: from.millisecondsSince1970)
        if let known = replanning.moved[key] { return known }
        let moved = OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: before, from: from, through: through)
            != OccurrenceCalendar.occurrences(at: reminder.time, on: reminder.weekdays, in: now, from: from, through: through)
        replanning.moved[key] = moved
        return moved
    }
}

/// A reminder's rule day decided by old zone rules, and its instant by the new ones (`until`),
/// after everything decided: the day is not decided again there.
struct MovedDecidedDay {
    let day: LocalDay
    let until: Instant
}
