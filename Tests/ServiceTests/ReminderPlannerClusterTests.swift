import Foundation
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// The planner on PostgreSQL (PROTOCOL "Cluster (PostgreSQL)"): its instances answer every op and
/// share the decisions by partitions; an outage answers `unavailable`, decides nothing twice and
/// passes by itself. Serialized: each test starts a server of its own.
@Suite(.serialized) struct ReminderPlannerClusterTests {
    static let henning = user("henning")

    /// Two planners on one database are both active (PROTOCOL "Cluster (PostgreSQL)"): a write
    /// through one is read through the other at once; they share the 64 partitions, and each
    /// occurrence is decided once, by the instance that owns its user. When one stops, the other
    /// owns every partition within 15 s and decides for every user, still once each.
    @Test func twoPlannersShareTheWorkAndOneTakesOverWhenTheOtherStops() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        let first = try rig.planner(clock: clock, following: logger)
        let second = try rig.planner(clock: clock, following: logger)
        let firstClient = rig.client(first), secondClient = rig.client(second)
        try rig.waitUntilSharing([first, second], timeout: 10)

        // Read-your-writes across instances: a put through one, read through the other.
        let users = (0..<16).map { user("user\($0)") }
        #expect(Set(users.map(Ownership.partition(of:))).count > 8)
        var reminders: [Reminder] = []
        for (index, userId) in users.enumerated() {
            let writer = index.isMultiple(of: 2) ? firstClient : secondClient
            let reminder = try writer.call(Ops.reminderPut, ReminderPutRequest(userId: userId, activity: .workout,
                                                                             time: clock.adding(seconds: 600).utcTime)).reminder
            reminders.append(reminder)
            let reader = index.isMultiple(of: 2) ? secondClient : firstClient
            #expect(try reader.call(Ops.reminderList, UserRequest(userId: userId)).reminders == [reminder])
        }
        _ = try secondClient.call(Ops.userPut, UserPutRequest(userId: users[0], timeZone: ZoneID("UTC")!, locale: .de))
        #expect(try firstClient.call(Ops.userGet, UserRequest(userId: users[0])).locale == .de)

        // Each instance moves its own clock over the occurrences: each is decided by its owner alone.
        let firstDecided = try firstClient.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 15 * 60)).decided ?? 0
        let secondDecided = try secondClient.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 15 * 60)).decided ?? 0
        #expect(firstDecided > 0 && secondDecided > 0 && firstDecided + secondDecided == users.count)

        let stopped = Date()
        #expect(first.stop())
        try rig.waitUntilSharing([second], timeout: 15)
        #expect(Date().timeIntervalSince(stopped) < 15)
        #expect(try secondClient.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 24 * 3600)).decided == users.count)

        var decided: [String: Int] = [:]
        for event in try secondClient.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events {
            guard case .reminderDue(let fired) = event.data else { continue }
            decided["\(fired.occurrence.reminderId) \(fired.occurrence.at)", default: 0] += 1
        }
        let expected = reminders.flatMap { reminder in
            [clock.adding(seconds: 600), clock.adding(seconds: 600 + 86_400)].map { "\(reminder.id) \($0)" }
        }
        #expect(decided == Dictionary(uniqueKeysWithValues: expected.map { ($0, 1) }))
    }

    /// A burst on PostgreSQL: the decision rows go out a chunk at a time (`decideBounded`'s
    /// `settle`), each event once its row answered. 60 occurrences at three instants, more than
    /// three chunks: each is decided once, the events in time order; moved over again, none twice.
    @Test func aBurstIsDecidedOnceAndInTimeOrderAcrossTheQueuedChunks() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let clock = Instant(rfc3339: "2026-11-16T06:00:00Z")!
        let planner = try rig.planner(clock: clock, following: try rig.sessionLogger())
        let client = rig.client(planner)
        let instants = [10, 11, 12].map { clock.adding(seconds: $0 * 60) }
        for index in 0..<20 {
            for at in instants {
                _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: user("burst\(index)"), activity: .workout, time: at.utcTime))
            }
        }
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 15 * 60)).decided == 60)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60)).decided == 0)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 86_400)).decided == 60)

        let fired = try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events.compactMap { event -> DueOccurrence? in
            guard case .reminderDue(let fired) = event.data else { return nil }
            return fired
        }
        let keys = fired.map { "\($0.occurrence.reminderId) \($0.occurrence.at)" }
        #expect(fired.count == 120 && Set(keys).count == 120)
        #expect(fired.map(\.occurrence.at) == fired.map(\.occurrence.at).sorted())
        #expect(Set(fired.prefix(60).map(\.occurrence.at)) == Set(instants))
    }

    /// PostgreSQL down: writes, reads in a batch and clock moves answer `unavailable`, `health`
    /// still answers, nothing of the failed requests is stored. Back up: the same planner serves
    /// again without a restart, and every occurrence is decided exactly once.
    @Test func anOutageAnswersUnavailableDecidesNothingTwiceAndPassesByItself() throws {
        let rig = try ServiceRig(.inproc, backend: .postgresql)
        let postgres = try #require(rig.postgres)
        // A fixed morning: from the wall clock's 23:20 on, the later reminder's time of day (past midnight) lists first.
        let clock = Instant(rfc3339: "2026-11-16T06:00:00Z")!
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
    /// once it is back, by the planner's own loop (no request, no restart), exactly once, and
    /// `late`: it fell due while nothing could be decided, as if the planner had been down
    /// (SEMANTICS §3, the grace window). Waits for the next whole minute: reminder times are minutes.
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

        Thread.sleep(forTimeInterval: Double(max(0, due.milliseconds(since: Instant.now()) - 3_000)) / 1000)  // until just before the instant: the outage must span it
        try postgres.halt()
        // Down over the instant: each try fails (a second apart) and stores nothing.
        Thread.sleep(forTimeInterval: Double(max(0, due.milliseconds(since: Instant.now()) + 4_000)) / 1000)  // the outage spans the instant
        try postgres.resume()

        let fired = try events.wait(for: Events.reminderDue, timeout: 15)
        guard case .reminderDue(let occurrence) = fired.first?.data else {
            Issue.record("reminder.due carries \(String(describing: fired.first?.data))")
            return
        }
        #expect(occurrence.occurrence.reminderId == reminder.id && occurrence.occurrence.at == due && occurrence.late)
        // Nothing more: one decision in the log, and the failed tries are errors, not decisions.
        _ = try events.settle(for: 2)
        let logged = try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events
        #expect(logged.filter { $0.type == Events.reminderDue.name }.count == 1)
        #expect(events.of(Events.reminderDue).count == 1)
    }
}
