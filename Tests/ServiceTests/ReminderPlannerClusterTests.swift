import Foundation
import Synchronization
import LHTClient
import LHTSchema
import Testing
import TestSupport

/// The planner on PostgreSQL (PROTOCOL "Cluster (PostgreSQL)"): it keeps users, reminders and its
/// schedule in memory, so one instance is active at a time and another stands by; an outage answers `unavailable`,
/// decides nothing twice and passes by itself. Serialized: each test starts a server of its own.
@Suite(.serialized) struct ReminderPlannerClusterTests {
    static let henning = user("henning")

    /// A second planner against the database one already uses stands by: it does not start (nor
    /// bind) while the first runs, and takes over, with everything the first stored, once the
    /// first stops (its session, and the lock with it, ends).
    @Test func aSecondPlannerStandsByAndTakesOverWhenTheFirstStops() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        let first = try rig.planner(clock: clock, following: logger)
        let reminder = try rig.client(first).call(Ops.reminderPut, ReminderPutRequest(userId: Self.henning, activity: .workout)).reminder

        let standby = Mutex<Result<InProcessService, Error>?>(nil)
        let started = DispatchGroup()
        started.enter()
        // The rig is used by this thread only until the first planner stops, and by that one after.
        nonisolated(unsafe) let rigForStandby = rig
        Thread {
            defer { started.leave() }
            let result = Result { try rigForStandby.planner(clock: clock, following: logger) }
            standby.withLock { $0 = result }
        }.start()
        Thread.sleep(forTimeInterval: 1.5)
        #expect(standby.withLock { $0 } == nil, "the second planner started while the first ran")
        // The first one serves on, unharmed.
        #expect(try rig.client(first).call(Ops.reminderList, UserRequest(userId: Self.henning)).reminders == [reminder])

        let stopped = Date()
        #expect(first.stop())
        #expect(started.wait(timeout: .now() + 15) == .success, "the standby did not take over")
        let next = try #require(try standby.withLock { $0 }?.get())
        #expect(Date().timeIntervalSince(stopped) < 5)
        #expect(try rig.client(next).call(Ops.reminderList, UserRequest(userId: Self.henning)).reminders == [reminder])
    }

    /// PostgreSQL down: writes, reads in a batch and clock moves answer `unavailable`, `health`
    /// still answers, nothing of the failed requests is stored. Back up: the same planner serves
    /// again without a restart, and every occurrence is decided exactly once.
    @Test func anOutageAnswersUnavailableDecidesNothingTwiceAndPassesByItself() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let postgres = try #require(rig.postgres)
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: clock, following: logger)
        // A clock move first catches up with the logger, which is down as well: up to 2 s.
        let client = TestClient(context: rig.context, planner, timeoutMilliseconds: 10_000)
        func put(minutes: Int64) throws(WireError) -> Reminder {
            try client.call(Ops.reminderPut, ReminderPutRequest(userId: Self.henning, activity: .workout,
                                                                time: clock.adding(seconds: minutes * 60).utcTime)).reminder
        }
        let early = try put(minutes: 10), later = try put(minutes: 40)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 15 * 60)).decided == 1)

        try postgres.halt()
        func expectUnavailable<Output>(_ what: String, _ call: () throws(WireError) -> Output) {
            do {
                _ = try call()
                Issue.record("\(what) succeeded while the database was down")
            } catch {
                #expect(error.code == .unavailable, "\(what): \(error)")
                #expect(error.message.contains("the database is unavailable"), "\(what): \(error.message)")
            }
        }
        expectUnavailable("reminder.put") { () throws(WireError) in try put(minutes: 50) }
        expectUnavailable("reminder.list") { () throws(WireError) in try client.call(Ops.reminderList, UserRequest(userId: Self.henning)) }
        // Over the later reminder's instant: not decided while nothing can be stored.
        expectUnavailable("clock.advance") { () throws(WireError) in try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 30 * 60)) }
        #expect(try client.call(Ops.health, NoFields()).service == "reminder-planner")  // health needs no database

        try postgres.resume()
        var listed: [Reminder]?
        try waitUntil(timeout: 20, interval: 0.2, "the planner serves again") {
            listed = try? client.call(Ops.reminderList, UserRequest(userId: Self.henning)).reminders
            return listed != nil
        }
        #expect(listed == [early, later])  // the put during the outage stored nothing
        #expect(try client.call(Ops.clockGet, NoFields()).now == clock.adding(seconds: 15 * 60))  // the failed move moved nothing
        #expect(try client.call(Ops.clockSet, ClockSetRequest(now: clock.adding(seconds: 45 * 60))).decided == 1)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60)).decided == 0)

        var decided: [String: Int] = [:]
        for event in try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events {
            guard case .reminderDue(let fired) = event.data else { continue }
            decided["\(fired.occurrence.reminderId) \(fired.occurrence.at)", default: 0] += 1
        }
        #expect(decided == ["\(early.id) \(clock.adding(seconds: 10 * 60))": 1, "\(later.id) \(clock.adding(seconds: 40 * 60))": 1])
    }

    /// On the system clock, an occurrence whose instant comes while PostgreSQL is down is decided
    /// once it is back, by the planner's own loop (no request, no restart), exactly once. Waits for
    /// the next whole minute: reminder times are minutes.
    @Test func anOccurrenceDueDuringAnOutageIsDecidedOnceWhenTheDatabaseIsBack() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let postgres = try #require(rig.postgres)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: nil, following: logger)
        let client = rig.client(planner)
        // The next whole minute at least 8 s away.
        var due = Instant.now().adding(seconds: 60).minuteFloor
        if due.milliseconds(since: Instant.now()) < 8_000 { due = due.adding(seconds: 60) }
        let reminder = try client.call(Ops.reminderPut, ReminderPutRequest(userId: Self.henning, activity: .workout, time: due.utcTime)).reminder
        let events = try rig.recorder(planner)

        Thread.sleep(forTimeInterval: Double(max(0, due.milliseconds(since: Instant.now()) - 3_000)) / 1000)
        try postgres.halt()
        // Down over the instant: each try fails (a second apart) and stores nothing.
        Thread.sleep(forTimeInterval: Double(max(0, due.milliseconds(since: Instant.now()) + 4_000)) / 1000)
        try postgres.resume()

        let fired = try events.wait(for: Events.reminderDue, timeout: 15)
        guard case .reminderDue(let occurrence) = fired.first?.data else {
            Issue.record("reminder.due carries \(String(describing: fired.first?.data))")
            return
        }
        #expect(occurrence.occurrence.reminderId == reminder.id && occurrence.occurrence.at == due && !occurrence.late)
        // Nothing more: one decision in the log, and the failed tries are errors, not decisions.
        _ = try events.settle(for: 2)
        let logged = try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events
        #expect(logged.filter { $0.type == Events.reminderDue.name }.count == 1)
        #expect(events.of(Events.reminderDue).count == 1)
    }
}
