import Foundation
import LHTSchema
import Logging
import Testing
@testable import ServiceHost
import Storage

/// The write-ahead log stays bounded under back-to-back commits (it grew by a page per commit
/// forever, since passive checkpoints alone never let SQLite rewind it).
@Suite struct WALTests {
    @Test func theLogStaysBoundedUnderSteadyCommits() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lht-wal-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let limit: Int64 = 128 << 10
        let host = try ServiceHost(service: .noalcStreak, apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                                   dataDirectory: directory, layout: StoreLayout(sqliteMigrations: { _ in }), logger: Logger(label: "test"), walLimit: limit)
        let wal = directory.appendingPathComponent("noalc-streak.sqlite-wal").path
        var largest: Int64 = 0
        // About 5 KB of log per commit: 1,500 commits write some 7 MB of log, 60 times the limit.
        let commits = 1_500
        for n in 0..<commits {
            try host.write { tx in _ = try tx.append(Events.streakUpdated, userId: UserID("u1")!, activity: .noalc, data: ServiceHostTests.note(n)) }
            if n % 50 == 0 {
                largest = max(largest, (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64) ?? 0)
            }
        }
        // The checkpointer looks every 200 ms, so the log passes the limit by what is written in between
        // (on a fast disk some hundreds of commits); unbounded, it would hold everything written.
        let written = try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64 ?? 0
        #expect(largest < Int64(commits) * 4096 / 2, "the log reached \(largest) bytes")
        // Once writing pauses, the next transaction rewinds it and SQLite cuts the file to the limit.
        Thread.sleep(forTimeInterval: 0.5)
        try host.write { tx in _ = try tx.append(Events.streakUpdated, userId: UserID("u1")!, activity: .noalc, data: ServiceHostTests.note(0)) }
        let after = try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64 ?? 0
        #expect(after <= limit, "the log holds \(after) bytes after a pause (\(written) before)")
        #expect(host.eventLog.lastSeq == Int64(commits) + 1)
    }
}
