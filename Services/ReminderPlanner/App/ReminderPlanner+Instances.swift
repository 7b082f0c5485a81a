import Foundation
import LHTSchema
import ServiceHost
import Storage

// Several instances over one PostgreSQL database (PROTOCOL "Cluster (PostgreSQL)"). Each keeps every
// user and reminder in memory and answers any op, bringing its memory up to what the others
// committed first; each decides only for the partitions of users it holds leases on.
extension ReminderPlanner {
    struct Instances {
        /// The stored `memoryVersion` this instance's memory reflects.
        var memoryVersion: Int64 = 0
        var balance = BalanceCadence()
    }

    /// Balances the partitions when it is time to, and at once when this instance holds none (it
    /// just connected again, its leases gone): before deciding anything, so that nothing due in its
    /// former share is passed over.
    func balancePartitionsIfDue() {
        guard host.store.isShared, instances.balance.isDue || host.store.ownedPartitions.isEmpty else { return }
        balancePartitions()
    }

    /// Takes this instance's share of the partitions and lets go of the rest; a failure is logged,
    /// and tried again a second later.
    func balancePartitions() {
        instances.balance.balancing()
        guard storeRetry.isDue else { return }
        do {
            try takeShare(now: host.time.now())
        } catch {
            recoverFromFailedDecisions(error, "balancing the partitions failed; will retry")
        }
    }

    /// Takes this instance's share of the partitions and lets go of the rest, then takes over those
    /// it newly holds: their reminders are scheduled from where their last owner's decisions
    /// reached, and what fell due since is decided by the grace window (`backlogThrough`).
    func takeShare(now: Instant) throws {
        let taken = try host.store.balancePartitions()
        guard !taken.isEmpty else { return }
        let stored = try host.query { try PlannerStore.decidedThrough($0) }
        for partition in taken { decidedThrough[partition] = stored[partition] ?? now }
        backlogThrough = max(backlogThrough, now)
        for user in reminders.owners where taken.contains(user) { scheduleReminders(of: user) }
        host.logger.notice("took over partitions", metadata: [
            "taken": "\(taken.count)", "owns": "\(host.store.ownedPartitions.count)", "of": "\(Ownership.partitionCount)"])
        try decideOrThrow(through: now)
    }

    /// Brings memory up to what other instances committed (under the log row's lock, at the start
    /// of each transaction): the users they changed are read again, with their reminders, and the
    /// few restored occurrences and moved days all of them.
    func followOtherInstances(_ tx: Transaction) throws {
        guard let version = try PlannerStore.value("memoryVersion", tx.sql), version != instances.memoryVersion else { return }
        for userId in try PlannerStore.changedUsers(since: instances.memoryVersion, tx.sql) {
            setUser(userId, try PlannerStore.user(userId, tx.sql))
            let stored = try PlannerStore.reminders(of: userId, tx.sql)
            let kept = Set(stored.map(\.id))
            for gone in reminders.owned(by: userId) where !kept.contains(gone.id) { setReminder(gone.id, nil) }
            for reminder in stored where reminders[reminder.id] != reminder { setReminder(reminder.id, reminder) }
        }
        restored = try PlannerStore.restoredOccurrences(tx.sql)
        movedDecidedDays = try PlannerStore.movedDecidedDays(tx.sql)
        instances.memoryVersion = version
    }

    /// Records, for the other instances, that `user`'s settings or reminders change in `tx`.
    func noteChanged(_ user: UserID?, _ tx: Transaction) throws {
        guard host.store.isShared, let user else { return }
        let before = instances.memoryVersion
        instances.memoryVersion += 1
        try PlannerStore.noteChanged(user, version: instances.memoryVersion, tx.sql)
        tx.onRollback { [unowned self] in instances.memoryVersion = before }
    }
}
