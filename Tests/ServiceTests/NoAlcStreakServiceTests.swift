import Foundation
import LHTClient
import LHTSchema
import Testing
import TestSupport

/// The streak service in-process, following an in-process session logger.
@Suite struct NoAlcStreakServiceTests {
    let henning = user("henning")

    func streakDays(_ events: [ReceivedEvent]) -> [Int] {
        events.compactMap { if case .streakUpdated(let state) = $0.data { state.streakDays } else { nil } }
    }

    @Test(arguments: Transport.allCases)
    func aLoggedNoAlcDayUpdatesTheStreak(_ transport: Transport) throws {
        let rig = try ServiceRig(transport)
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
    @Test func startsCaughtUpWithWhatWasLoggedBefore() throws {
        let rig = try ServiceRig(.inproc)
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
