import LHTSchema
import ServiceHost
import Storage

// What the host calls between requests: the planner's timed work and its write hook (its tzdata
// version is in `ReminderPlanner+TZData`).
extension ReminderPlanner {
    public func beforeWriting(_ tx: Transaction) throws {
        guard host.store.isShared else { return }
        cluster.followPending = false
        if tx.expectsInsteadOfReading {
            // Memory answers for the stored version it reflects; a stored row is written with the first change.
            return try tx.sql.expectLater("COALESCE((SELECT value FROM planner_state WHERE key = ?), 0) = ?",
                                          [.text("memoryVersion"), .integer(cluster.memoryVersion)], "memory as of the stored memoryVersion")
        }
        // Not read back yet: an upstream write, whose lock goes out with its first read.
        if cluster.versionUnderLock == nil, tx.sql.hasStatementsWaiting {
            cluster.followPending = true
            // Read back with the COMMIT when nothing took it: not this transaction's for the next.
            tx.afterCommit { [unowned self] in cluster.versionUnderLock = nil }
            tx.onRollback { [unowned self] in cluster.versionUnderLock = nil }
            return
        }
        try followOtherInstances(tx.sql, storedVersion: cluster.versionUnderLock.take())
    }

    /// While decisions wait for a known gap, the catch-up's reply or deadline wakes the loop.
    public func nextDeadline() -> Instant? {
        // Planning again after a tzdata update goes on at once, a step a turn; after a failed
        // transaction, timed work waits for its retry.
        let retry = host.time.now().adding(milliseconds: storeRetry.millisecondsLeft)
        if !replanning.isDone { return retry }
        guard manualClock == nil, !feed.isWaitingForKnownGap, let next = scheduler.nextInstant else { return nil }
        return max(next, retry)
    }

    /// Each part may be long (a takeover, a burst): `health` is answered between them.
    public func tick() {
        followTZData()
        host.answerHealthIfDue()
        keepUpWithOtherInstances()
        host.answerHealthIfDue()
        if manualClock == nil { decideRunning(through: host.time.now()) }
    }
}
