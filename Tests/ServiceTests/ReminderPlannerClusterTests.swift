import Foundation
import LHTClient
import LHTSchema
import Testing
import TestSupport

/// The planner on PostgreSQL (PROTOCOL "Cluster (PostgreSQL)"): it keeps users, reminders and its
/// schedule in memory, so it runs as one instance at a time; an outage answers `unavailable`,
/// decides nothing twice and passes by itself. Serialized: each test starts a server of its own.
@Suite(.serialized) struct ReminderPlannerClusterTests {
    static let henning = user("henning")

    /// A second planner against the database one already uses refuses to start, naming the other
    /// instance; once the first stops (its session, and the lock with it, ends), one starts again.
    @Test func aSecondPlannerAgainstTheSameDatabaseRefusesToStart() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        let first = try rig.planner(clock: clock, following: logger)
        let reminder = try rig.client(first).call(Ops.reminderPut, ReminderPutRequest(userId: Self.henning, activity: .workout)).reminder

        do {
            _ = try rig.planner(clock: clock, following: logger)
            Issue.record("a second planner started against the same database")
        } catch {
            #expect("\(error)".contains("another reminder-planner runs against this database"), "\(error)")
        }
        // The first one serves on, unharmed.
        #expect(try rig.client(first).call(Ops.reminderList, UserRequest(userId: Self.henning)).reminders == [reminder])

        #expect(first.stop())
        var next: InProcessService?
        // The server notices the closed session at once; allow it a moment all the same.
        try waitUntil(timeout: 10, interval: 0.2, "a planner starts once the first stopped") {
            next = try? rig.planner(clock: clock, following: logger)
            return next != nil
        }
        #expect(try rig.client(next!).call(Ops.reminderList, UserRequest(userId: Self.henning)).reminders == [reminder])
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
