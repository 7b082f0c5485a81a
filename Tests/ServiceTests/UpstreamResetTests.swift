import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// A follower recognises an upstream whose event log is a different history (its data was wiped),
/// even when the new history is longer than the old, and never mixes the two.
@Suite struct UpstreamResetTests {
    let henning = user("henning")
    let anna = user("anna")

    func log(_ rig: ServiceRig, _ logger: InProcessService, _ who: UserID, days: Int) throws {
        for offset in 0..<days {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: who, day: day("2026-03-01").adding(days: offset), level: .steady))
        }
    }

    @Test func aWipedUpstreamHaltsTheFollowerUntilItIsToldToFollowTheNewHistory() throws {
        let rig = try ServiceRig(.tcp)
        var logger = try rig.sessionLogger()
        let streakData = rig.scratch.subdirectory("streak-data").path
        var streak = try rig.streak(loggerAPI: logger.api, loggerEvents: logger.events, extra: ["--data-dir", streakData])
        try log(rig, logger, henning, days: 3)
        try waitUntil(timeout: 5, "the streak applies the first history") {
            try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))).streakDays == 3
        }

        // The logger's data is wiped: same endpoints, a fresh database, a longer history than the old one.
        logger.stop()
        logger = try rig.sessionLogger(restarting: logger, dataDirectory: rig.scratch.subdirectory("wiped-logger").path)
        try log(rig, logger, anna, days: 5)
        try waitUntil(timeout: 10, "the streak notices the new history") {
            try rig.client(streak).call(Ops.health, NoFields()).counters["upstreamReset"] == 1
        }
        let health = try rig.client(streak).call(Ops.health, NoFields())
        #expect(health.lastError?.contains("different history") == true)
        // Nothing of the new history was mixed into the old one.
        #expect(try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: anna, asOf: day("2026-03-05"))).streakDays == 0)

        // The operator's way on: restart once with --accept-upstream-reset; the new history is followed from its start.
        streak.stop()
        streak = try rig.streak(loggerAPI: logger.api, loggerEvents: logger.events,
                                extra: ["--data-dir", streakData, "--accept-upstream-reset"])
        try waitUntil(timeout: 10, "the streak follows the new history") {
            try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: anna, asOf: day("2026-03-05"))).streakDays == 5
        }
        #expect(try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))).streakDays == 3)
        #expect(try rig.client(streak).call(Ops.health, NoFields()).upstreams.first?.appliedSeq == 5)
    }

    /// On PostgreSQL the followers' partitions count in the history they follow too: once told to
    /// follow a new one, every partition starts at its start, so the new entries are applied in
    /// full (stored and published), none taken for one already applied.
    @Test func onPostgreSQLEveryPartitionFollowsTheNewHistoryFromItsStart() throws {
        let rig = try ServiceRig(.tcp, backend: .postgresql)
        let postgres = try #require(rig.postgres)
        var logger = try rig.sessionLogger()
        var streak = try rig.streak(following: logger)
        try log(rig, logger, henning, days: 3)
        try waitUntil(timeout: 10, "the streak applies the first history") {
            try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))).streakDays == 3
        }

        // The logger's schema is dropped: a new log, with a new identity, from seq 1.
        logger.stop()
        try postgres.connect().execute("DROP SCHEMA session_logger CASCADE")
        logger = try rig.sessionLogger(restarting: logger)
        try log(rig, logger, anna, days: 2)
        try waitUntil(timeout: 10, "the streak notices the new history") {
            try rig.client(streak).call(Ops.health, NoFields()).counters["upstreamReset"] == 1
        }

        streak.stop()
        streak = try rig.streak(loggerAPI: logger.api, loggerEvents: logger.events, extra: ["--accept-upstream-reset"])
        try waitUntil(timeout: 10, "the streak follows the new history") {
            try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: anna, asOf: day("2026-03-02"))).streakDays == 2
        }
        let published = try rig.client(streak).call(Ops.eventsSince, EventsSinceRequest(after: 0)).events.compactMap { event -> StreakState? in
            if case .streakUpdated(let state) = event.data { state } else { nil }
        }
        #expect(published.filter { $0.userId == anna }.map(\.streakDays) == [1, 2], "each new entry stored and published once")
        #expect(try rig.client(streak).call(Ops.health, NoFields()).owns?.partitions == Ownership.partitionCount)
    }
}
