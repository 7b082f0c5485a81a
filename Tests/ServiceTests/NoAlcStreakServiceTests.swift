import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// The streak service in-process, following an in-process session logger.
@Suite struct NoAlcStreakServiceTests {
    let henning = user("henning")

    func streakDays(_ events: [ReceivedEvent]) -> [Int] {
        events.compactMap { if case .streakUpdated(let state) = $0.data { state.streakDays } else { nil } }
    }

    @Test(arguments: Transport.allCases, Backend.allCases)
    func aLoggedNoAlcDayUpdatesTheStreak(_ transport: Transport, _ backend: Backend) throws {
        let rig = try ServiceRig(transport, backend: backend)
        let logger = try rig.sessionLogger()
        let streak = try rig.streak(following: logger)
        let updates = try rig.recorder(streak)
        let log = rig.client(logger), client = rig.client(streak)

        _ = try log.call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01"), level: .steady))
        _ = try log.call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-02"), level: .steady))
        let updated = try updates.wait(for: Events.streakUpdated, count: 2)
        #expect(streakDays(updated) == [1, 2])
        #expect(updated.map(\.seq) == [1, 2])
        #expect(updated.last?.topic == Events.streakUpdated.topic(userId: henning, activity: .noalc).description)

        let state = try client.call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-02")))
        #expect(updated.last?.data == .streakUpdated(state))
        #expect(state.streakDays == 2 && state.lastLoggedDay == day("2026-03-02") && state.todayLogged)
        #expect(try client.call(Ops.streakGet, StreakGetRequest(userId: user("nobody"), asOf: day("2026-03-02"))).streakDays == 0)

        let calendar = try client.call(Ops.calendarGet, #require(CalendarGetRequest(userId: henning, month: "2026-03")))
        #expect(calendar.days.filter { $0.level == .steady }.map(\.day) == [day("2026-03-01"), day("2026-03-02")])
    }

    /// What was logged before the streak service started is there as soon as it is: it catches up
    /// before it serves.
    @Test(arguments: Backend.allCases)
    func startsCaughtUpWithWhatWasLoggedBefore(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let logger = try rig.sessionLogger()
        for offset in 0..<3 {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01").adding(days: offset), level: .steady))
        }
        let streak = try rig.streak(following: logger)
        let state = try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03")))
        #expect(state.streakDays == 3)
        let since = try rig.client(streak).call(Ops.eventsSince, EventsSinceRequest(after: 0))
        #expect(streakDays(since.events) == [1, 2, 3])
    }
}

/// The streak service's cursor lives in its projection file (`Projection.cursorsOnly`): lost with
/// it, the service reads the logger again from its start and publishes nothing twice.
@Suite struct NoAlcStreakCursorTests {
    @Test func aLostCursorReadsTheLogAgainAndPublishesNothingTwice() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        var streak = try rig.streak(following: logger)
        let henning = user("henning")
        for (offset, level) in [NoAlcLevel.steady, .steady, .wild].enumerated() {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01").adding(days: offset), level: level))
        }
        // A correction of the third day, logged later: the older entry read again must not undo it
        // (it would break the streak, and publish that).
        _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-03"), level: .steady))
        try waitUntil("the streak service applied four entries") {
            (try? rig.client(streak).call(Ops.health, NoFields()).upstreams.first?.appliedSeq) == 4
        }
        let before = try rig.client(streak).call(Ops.eventsSince, EventsSinceRequest(after: 0)).events
        let state = try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03")))
        #expect(streak.stop())

        let directory = rig.scratch.subdirectory(ServiceName.noalcStreak.rawValue)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("noalc-streak.projection.sqlite"))
        streak = try rig.streak(following: logger)
        #expect(try rig.client(streak).call(Ops.health, NoFields()).upstreams.first?.appliedSeq == 4)
        #expect(try rig.client(streak).call(Ops.eventsSince, EventsSinceRequest(after: 0)).events.map(\.id) == before.map(\.id))
        #expect(try rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))) == state)
        let calendar = try rig.client(streak).call(Ops.calendarGet, #require(CalendarGetRequest(userId: henning, month: "2026-03")))
        #expect(calendar.days.first { $0.day == day("2026-03-03") }?.level == .steady)
        #expect(state.streakDays == 3)
    }
}
