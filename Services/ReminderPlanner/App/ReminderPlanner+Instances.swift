import Foundation
import LHTSchema
import ServiceHost
import Storage

// Several instances over one PostgreSQL database (PROTOCOL "Cluster (PostgreSQL)"). Each keeps every
// user and reminder in memory and answers any op, bringing its memory up to what the others
// committed first; each decides only for the partitions of users it holds leases on.
extension ReminderPlanner {
    /// What this instance keeps to share a store with other instances of the planner (not to be
    /// confused with the client's `Instances`, the endpoints of one service).
    struct ClusterState {
        /// The stored `memoryVersion` this instance's memory reflects.
        var memoryVersion: Int64 = 0
        /// The stored `memoryVersion` as read with the log row's lock of the transaction starting
        /// (`readMemoryVersionUnderLock`), until its write hook takes it; `.some(nil)`: no row.
        var versionUnderLock: Int64??
        /// An upstream write whose lock and version read went out with its first read: memory
        /// follows the other instances once they are back (`followIfPending`).
        var followPending = false
        var balance = BalanceCadence()
        /// When this instance next looks whether others changed users or reminders (`followOtherInstancesIfDue`).
        var nextFollowCheck: UInt64 = 0
        /// The loop's last turn on the system clock: a turn far later means this process was paused
        /// or stalled, and what fell due meanwhile is late (`noteStall`).
        var lastTurn: Instant?
    }

    /// How often an instance looks at the stored `memoryVersion` outside its own transactions, so
    /// that a change committed through another instance reaches this one's schedule within a
    /// second even when this one writes nothing itself (decision record 0030).
    static let followCheckNanoseconds: UInt64 = 250_000_000
    /// A gap between two loop turns longer than this is a pause (SIGSTOP, a frozen VM, a stall):
    /// the loop turns at least every 100 ms otherwise, and each deciding step is short.
    static let stallMilliseconds: Int64 = 2_000

    /// The loop's turn, before deciding: a pause noticed (on the system clock), the partitions
    /// balanced when due, and what other instances changed read.
    func keepUpWithOtherInstances() {
        if manualClock == nil { noteStall(now: host.time.now()) }
        balancePartitionsIfDue()
        followOtherInstancesIfDue()
    }

    /// Balances the partitions when it is time to, and at once when this instance holds none (it
    /// just connected again, its leases gone): before deciding anything, so that nothing due in its
    /// former share is passed over.
    func balancePartitionsIfDue() {
        guard host.store.isShared, cluster.balance.isDue || host.store.ownedPartitions.isEmpty else { return }
        balancePartitions()
    }

    /// Takes this instance's share of the partitions and lets go of the rest; a failure is logged,
    /// and tried again a second later.
    func balancePartitions() {
        cluster.balance.balancing()
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
        // Memory first, as the database has it: the last owner's users may have changed through
        // instances whose changes this one has not read yet.
        try host.query { try followOtherInstances($0) }
        let stored = try host.query { try PlannerStore.decidedThrough($0) }
        for partition in taken { decidedThrough[partition] = stored[partition] ?? now }
        backlogThrough = max(backlogThrough, now)
        for user in reminders.owners where taken.contains(user) {
            scheduleReminders(of: user)
            host.answerHealthIfDue()
        }
        replanTakenOver(taken)
        host.logger.notice("took over partitions", metadata: [
            "taken": "\(taken.count)", "owns": "\(host.store.ownedPartitions.count)", "of": "\(Ownership.partitionCount)"])
        try decideOrThrow(through: now)
    }

    /// Looks, every `followCheckNanoseconds` and outside any transaction, whether other instances
    /// changed users or reminders, and if so brings memory and the schedule up to them: the owner
    /// of a user then decides a reminder put, moved or deleted through any instance at its instant.
    func followOtherInstancesIfDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard host.store.isShared, now >= cluster.nextFollowCheck, storeRetry.isDue else { return }
        cluster.nextFollowCheck = now + Self.followCheckNanoseconds
        do {
            try host.query { try followOtherInstances($0) }
        } catch {
            host.recordError("reading other instances' changes failed; will retry", ["error": "\(error)"])
            storeRetry.failed()
        }
    }

    /// On the system clock: after a loop turn that came far later than the one before (this process
    /// was paused or stalled), what fell due meanwhile is decided by the grace window, `late` or
    /// `missed`, as after a restart.
    func noteStall(now: Instant) {
        defer { cluster.lastTurn = now }
        guard let last = cluster.lastTurn, now.milliseconds(since: last) > Self.stallMilliseconds else { return }
        host.logger.warning("the loop stalled; what fell due meanwhile is decided late", metadata: ["milliseconds": "\(now.milliseconds(since: last))"])
        backlogThrough = max(backlogThrough, now)
    }

    /// Brings memory up to what other instances committed: under the log row's lock at the start of
    /// each transaction, and between them (`followOtherInstancesIfDue`, `takeShare`). The users they
    /// changed are read again, with their reminders, and rescheduled; the few restored occurrences
    /// and moved days all of them. Outside a transaction the version is read first: what the
    /// reads after it see is at least that new, and anything newer is read again next time.
    func followOtherInstances(_ sql: StoreConnection, storedVersion: Int64?? = nil) throws {
        guard let version = try storedVersion ?? PlannerStore.value("memoryVersion", sql), version != cluster.memoryVersion else { return }
        for userId in try PlannerStore.changedUsers(since: cluster.memoryVersion, sql) {
            host.answerHealthIfDue()
            setUser(userId, try PlannerStore.user(userId, sql))
            let stored = try PlannerStore.reminders(of: userId, sql)
            let kept = Set(stored.map(\.id))
            for gone in reminders.owned(by: userId) where !kept.contains(gone.id) { setReminder(gone.id, nil) }
            for reminder in stored where reminders[reminder.id] != reminder { setReminder(reminder.id, reminder) }
        }
        restored = try PlannerStore.restoredOccurrences(sql)
        movedDecidedDays = try PlannerStore.movedDecidedDays(sql)
        cluster.memoryVersion = version
    }

    /// In an upstream write whose version read went out with its first read (`beforeWriting`),
    /// follows the other instances once. True if memory changed: what was read from it is stale.
    func followIfPending(_ tx: Transaction) throws -> Bool {
        guard cluster.followPending else { return false }
        cluster.followPending = false
        if cluster.versionUnderLock == nil { try tx.sql.sendWaiting() }
        let before = cluster.memoryVersion
        try followOtherInstances(tx.sql, storedVersion: cluster.versionUnderLock.take())
        return cluster.memoryVersion != before
    }

    /// Has the store read the stored `memoryVersion` with the log row's lock of each write
    /// transaction, in the same round trip, for the write hook (`beforeWriting`) to take.
    func readMemoryVersionUnderLock() {
        _ = host.store.readUnderEachWriteLock("SELECT (SELECT value FROM planner_state WHERE key = ?)", [.text("memoryVersion")]) {
            [unowned self] row in cluster.versionUnderLock = .some(row.integer(0))
        }
    }

    /// Records, for the other instances, that `user`'s settings or reminders change in `tx`.
    func noteChanged(_ user: UserID?, _ tx: Transaction) throws {
        guard host.store.isShared, let user else { return }
        let before = cluster.memoryVersion
        cluster.memoryVersion += 1
        try PlannerStore.noteChanged(user, version: cluster.memoryVersion, tx.sql)
        tx.onRollback { [unowned self] in cluster.memoryVersion = before }
    }
}
