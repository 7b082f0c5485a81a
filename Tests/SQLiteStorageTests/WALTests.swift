import Foundation
import LHTSchema
import SQLiteStorage
import Storage
import Testing
import TestSupport

/// The write-ahead log stays bounded under back-to-back commits (it grew by a page per commit
/// forever, since passive checkpoints alone never let SQLite rewind it).
@Suite struct WALTests {
    static let now = Instant(secondsSince1970: 1_780_000_000)

    /// An event the size of a streak update, told apart by `n`.
    static func append(_ store: SQLiteStore, _ n: Int) throws {
        let state = StreakState(userId: UserID("u1")!, asOf: LocalDay(year: 2026, month: 1, day: 1)!, policy: "seed", streakDays: n,
                                rewardsEarned: 0, rewardsUsed: 0, rewardsLost: 0, rewardsAvailable: 0, lastLoggedDay: nil, todayLogged: false)
        try store.write(now: now, { tx in _ = try tx.append(Events.streakUpdated, userId: state.userId, activity: .noalc, data: state) },
                        committed: { _ in })
    }

    @Test func theLogStaysBoundedUnderSteadyCommits() throws {
        let directory = temporaryDirectory("lht-wal")
        defer { try? FileManager.default.removeItem(at: directory) }
        let limit: Int64 = 128 << 10
        let store = try SQLiteStore(directory: directory, name: "noalc-streak", migrations: [], logger: quietLogger("wal"), walLimit: limit)
        defer { store.close() }
        let wal = directory.appendingPathComponent("noalc-streak.sqlite-wal").path
        var largest: Int64 = 0
        // About 5 KB of log per commit: 1,500 commits write some 7 MB of log, 60 times the limit.
        let commits = 1_500
        for n in 0..<commits {
            try Self.append(store, n)
            if n % 50 == 0 {
                largest = max(largest, (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64) ?? 0)
            }
        }
        // The checkpointer looks every 200 ms, so the log passes the limit by what is written in between
        // (on a fast disk some hundreds of commits); unbounded, it would hold everything written.
        let written = try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64 ?? 0
        #expect(largest < Int64(commits) * 4096 / 2, "the log reached \(largest) bytes")
        // Once writing pauses (the pause is what is tested: the checkpointer catches up and asks for a
        // rewind), the next transaction rewinds it and SQLite cuts the file to the limit.
        Thread.sleep(forTimeInterval: 0.5)
        try Self.append(store, 0)
        let after = try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64 ?? 0
        #expect(after <= limit, "the log holds \(after) bytes after a pause (\(written) before)")
        #expect(store.eventLog.lastSeq == Int64(commits) + 1)
    }

    /// A clean stop closes every connection before it returns, the checkpointer's too, so the next
    /// process finds the file unlocked: SQLite removes the log only when its last connection closes.
    @Test func closeLeavesNoConnectionOpen() throws {
        let directory = temporaryDirectory("lht-wal-close")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(directory: directory, name: "noalc-streak", migrations: [], logger: quietLogger("wal"))
        try Self.append(store, 1)
        store.close()
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("noalc-streak.sqlite-wal").path))
        withExtendedLifetime(store) {}
    }
}
