import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Synchronization
import Testing
import TestSupport

/// A long `clock.advance` moves in committed steps and the planner answers other requests between
/// them: a months-long advance in one transaction would hold every request behind it.
@Suite struct PlannerClockStepTests {
    /// `LHT_TEST_ADVANCE_REMINDERS` (default 100) sets the number of daily reminders; 10000 gives the
    /// finding's figure. The advance is 180 days.
    @Test func healthAndClockGetAreAnsweredBetweenTheStepsOfALongAdvance() throws {
        let count = ProcessInfo.processInfo.environment["LHT_TEST_ADVANCE_REMINDERS"].flatMap(Int.init) ?? 100
        let days: Int64 = 180
        let rig = try ServiceRig()
        let start = Instant(rfc3339: "2026-11-16T00:00:00Z")!
        let target = start.adding(seconds: days * 86_400)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: start, following: logger)
        let client = rig.client(planner)
        for index in 0..<count {
            // Daily, spread over the day and never at midnight: exactly `days` occurrences each in (start, target].
            let minute = 1 + index * 7 % 1439
            _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: user("u\(index % 50)"), activity: .workout,
                                                                    time: LocalTime(hour: minute / 60, minute: minute % 60)!))
        }

        let context = rig.context, api = planner.api
        let outcome = Mutex<Result<ClockReply, WireError>?>(nil)
        let began = Date()
        let mover = Thread {
            let client = TestClient(context: context, endpoint: api, timeoutMilliseconds: 1_800_000)
            let result: Result<ClockReply, WireError>
            do throws(WireError) { result = .success(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: days * 86_400))) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
        }
        mover.start()
        var latencies: [Double] = []
        var clocks: [Instant] = []
        let watcher = TestClient(context: rig.context, planner, timeoutMilliseconds: 1_800_000)
        while outcome.withLock({ $0 == nil }) {
            let asked = Date()
            _ = try watcher.call(Ops.health, NoFields())
            latencies.append(Date().timeIntervalSince(asked) * 1000)
            clocks.append(try watcher.call(Ops.clockGet, NoFields()).now)
            Thread.sleep(forTimeInterval: 0.01)  // a sample every few milliseconds while the move runs
        }
        let seconds = Date().timeIntervalSince(began)
        let reply = try #require(outcome.withLock { $0 }).get()
        let sorted = latencies.sorted()
        print(String(format: "clock.advance 180 days, %d reminders: %d decided in %.1f s; health during it: %d answers, median %.1f ms, p99 %.1f ms, max %.1f ms",
                     count, reply.decided ?? -1, seconds, sorted.count, sorted.isEmpty ? 0 : sorted[sorted.count / 2],
                     sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)], sorted.last ?? 0))

        #expect(reply.now == target)
        #expect(reply.decided == count * Int(days))
        // Served while the advance was under way, at a committed step: between the start and the target.
        #expect(clocks.contains { $0 > start && $0 < target })
        #expect(clocks == clocks.sorted())
        #expect(try client.call(Ops.clockGet, NoFields()).now == target)
    }

    /// Clock moves happen one at a time: another `clock.advance` arriving between the steps of one
    /// waits for it (it is deferred until the session log is caught up, which the loop does only
    /// once the running move has replied), then moves on from where the first ended.
    @Test func aSecondClockMoveDuringAnAdvanceWaitsForIt() throws {
        let rig = try ServiceRig()
        let start = Instant(rfc3339: "2026-11-16T00:00:00Z")!
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: start, following: logger)
        let client = rig.client(planner)
        for index in 0..<40 {
            _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: user("c"), activity: .workout,
                                                                    time: LocalTime(hour: index % 24, minute: 1 + index)!))
        }
        let context = rig.context, api = planner.api
        let outcome = Mutex<Result<ClockReply, WireError>?>(nil)
        let mover = Thread {
            let client = TestClient(context: context, endpoint: api, timeoutMilliseconds: 600_000)
            let result: Result<ClockReply, WireError>
            do throws(WireError) { result = .success(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 400 * 86_400))) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
        }
        mover.start()
        let watcher = TestClient(context: rig.context, planner, timeoutMilliseconds: 600_000)
        var second: ClockReply?
        try waitUntil(timeout: 600, interval: 0.005, "the first committed step or the first move's reply") {
            if try watcher.call(Ops.clockGet, NoFields()).now > start {
                // Answered only after the first move replied: it goes on from where the first ended
                // (below). Whether the mover's thread has stored that reply by now is the scheduler's
                // business, so it is not asked (on a busy machine it sometimes had not).
                second = try watcher.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60))
                return true
            }
            return outcome.withLock { $0 != nil }
        }
        try waitUntil(timeout: 600, "the first move replied") { outcome.withLock { $0 != nil } }
        let reply = try #require(outcome.withLock { $0 }).get()
        let target = start.adding(seconds: 400 * 86_400)
        #expect(reply.now == target)
        #expect(reply.decided == 40 * 400)
        #expect(try #require(second).now == target.adding(seconds: 60))
        #expect(try client.call(Ops.clockGet, NoFields()).now == target.adding(seconds: 60))
    }
}
