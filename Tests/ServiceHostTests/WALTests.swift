import Foundation
import LHTSchema
import Logging
import Testing
@testable import ServiceHost

/// The write-ahead log stays bounded under back-to-back commits (it grew by a page per commit
/// forever, since passive checkpoints alone never let SQLite rewind it).
@Suite struct WALTests {
    @Test func theLogStaysBoundedUnderSteadyCommits() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lht-wal-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let limit: Int64 = 1 << 20
        let host = try ServiceHost(service: .noalcStreak, apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                                   dataDirectory: directory, migrations: { _ in }, logger: Logger(label: "test"), walLimit: limit)
        let wal = directory.appendingPathComponent("noalc-streak.sqlite-wal").path
        var largest: Int64 = 0
        // About 5 KB of log per commit: 6,000 commits are 30 times the limit.
        for n in 0..<6_000 {
            try host.write { tx in _ = try tx.append(Events.streakUpdated, userId: UserID("u1")!, activity: .noalc, data: ServiceHostTests.note(n)) }
            if n % 100 == 0 {
                largest = max(largest, (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int64) ?? 0)
            }
        }
        // The checkpointer looks every 200 ms, so the log may pass the limit by what is written in between.
        #expect(largest < 4 * limit, "the log reached \(largest) bytes")
        #expect(host.eventLog.lastSeq == 6_000)
    }
}
