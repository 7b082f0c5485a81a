import Foundation
import LHTSchema
import SQLiteStorage
import Storage
import Synchronization
import Testing
import TestSupport
import ZeroMQ

/// While the loop runs, commits reach the disk on a thread of their own (`CommitSync`): what waits
/// on a commit (a reply, an event) runs once the sync that covers it is done, in commit order, and
/// never before. How the host's replies, events and `health` ride on it: ServiceHostTests.
@Suite struct CommitSyncTests {
    /// Holds the syncer thread before each sync while closed.
    final class Gate: Sendable {
        private let isOpen = Mutex(false)
        private let opened = NSCondition()
        func open() {
            opened.withLock {
                isOpen.withLock { $0 = true }
                opened.broadcast()
            }
        }
        func pass() { opened.withLock { while !isOpen.withLock({ $0 }) { opened.wait() } } }
    }

    @Test func whatWaitsOnACommitRunsOnceItsSyncIsDoneInOrder() throws {
        let store = try SQLiteStore(directory: temporaryDirectory("lht-commit-sync"), name: "store", migrations: [],
                                    logger: quietLogger("store"))
        defer { store.close() }
        let gate = Gate()
        store.commits.beforeSync = { gate.pass() }
        try store.commits.startThread()
        defer {
            gate.open()
            store.commits.stopThread()
        }
        let wake = try #require(store.commits.wake)
        var ran: [Int64] = []
        for n in 1...2 {
            try WALTests.append(store, n)
            store.commits.afterDurable { ran.append(Int64(n)) }
        }
        // Committed, the sync held: the syncer gives no wake, and nothing that waits has run.
        #expect(store.eventLog.lastSeq == 2)
        #expect(try !Poller.readable([], signals: [wake], timeoutMilliseconds: 300)[0], "a sync finished while held")
        store.commits.runDurable()
        #expect(ran.isEmpty, "an action ran before its commit was on disk")

        gate.open()
        try waitUntil(timeout: 2, "the held syncs") {
            if try Poller.readable([], signals: [wake], timeoutMilliseconds: 100)[0] {
                wake.clear()
                store.commits.runDurable()
            }
            return ran.count == 2
        }
        #expect(ran == [1, 2])
        // With nothing waiting and every commit synced, an action runs at once.
        store.commits.afterDurable { ran.append(3) }
        #expect(ran == [1, 2, 3])
    }
}
