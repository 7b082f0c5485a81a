import Foundation
import GRDB
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// What the planner derives from its log and its upstream comes back when its files are lost; and
/// what it keeps only while needed goes.
extension ReminderPlannerServiceTests {
    /// Decisions are a projection of the planner's log, in a file of their own that a thread applies
    /// behind the log: lost with it (a machine that went down with it open), they come back from the
    /// log, and a decided occurrence stays decided.
    @Test func decisionsComeBackFromTheLogWhenTheirFileIsLost() throws {
        let rig = try ServiceRig()
        // A fixed morning: from the wall clock's last hour of a day, the hour's move ends in the next day,
        // whose upcoming list starts after the fired occurrence.
        let clock = Instant(rfc3339: "2026-11-16T06:00:00Z")!
        let logger = try rig.sessionLogger()
        var planner = try rig.planner(clock: clock, following: logger)
        let henning = user("henning")
        _ = try rig.client(planner).call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout,
                                                                             time: clock.adding(seconds: 600).utcTime))
        #expect(try rig.client(planner).call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 3600)).decided == 1)
        let upcoming = UpcomingRequest(userId: henning, days: 2)
        let before = try rig.client(planner).call(Ops.reminderUpcoming, upcoming).occurrences
        #expect(before.first?.at == clock.adding(seconds: 600) && before.first?.status == .fired)
        let lastSeq = try rig.client(planner).call(Ops.health, NoFields()).lastSeq
        #expect(planner.stop())

        let directory = rig.scratch.subdirectory(ServiceName.reminderPlanner.rawValue)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("reminder-planner.decisions.sqlite"))
        planner = try rig.planner(clock: clock, following: logger)
        let client = rig.client(planner)
        #expect(try client.call(Ops.reminderUpcoming, upcoming).occurrences == before)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60)).decided == 0)
        #expect(try client.call(Ops.health, NoFields()).lastSeq == lastSeq)
    }

    /// The planner's copies of the logger's sessions live in the projection file too: lost with it,
    /// they are followed again from the logger before anything is decided.
    @Test func sessionCopiesComeBackFromTheLoggerWhenTheirFileIsLost() throws {
        let rig = try ServiceRig()
        let clock = Instant.now().minuteFloor
        let due = clock.adding(seconds: 30 * 60)
        let logger = try rig.sessionLogger()
        var planner = try rig.planner(clock: clock, following: logger)
        let henning = user("henning")
        _ = try rig.client(planner).call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .mindfulness, time: due.utcTime))
        let end = Instant.now().adding(seconds: -5 * 60)
        let session = try rig.client(logger).call(Ops.sessionLog, SessionLogRequest(userId: henning, activity: .mindfulness,
                                                                                   start: end.adding(seconds: -15 * 60), end: end))
        #expect(try rig.recorder(planner).wait(for: Events.reminderCancelled).count == 1)
        #expect(planner.stop())

        let directory = rig.scratch.subdirectory(ServiceName.reminderPlanner.rawValue)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("reminder-planner.projection.sqlite"))
        planner = try rig.planner(clock: clock, following: logger)
        #expect(try rig.client(planner).call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 3600)).decided == 1)
        let suppressed = try rig.recorder(planner).wait(for: Events.reminderSuppressed)
        guard case .occurrence(let decided) = suppressed.first?.data else {
            Issue.record("reminder.suppressed carries \(String(describing: suppressed.first?.data))")
            return
        }
        #expect(decided.at == due && decided.cause == session.id)
        #expect(try rig.client(planner).call(Ops.health, NoFields()).counters["sessionsApplied"] == 1)
        // The session applied again announced nothing new.
        let logged = try rig.client(planner).call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events
        #expect(logged.filter { $0.type == Events.reminderCancelled.name }.count == 1)
    }

    /// An announced cancellation is kept while its occurrence is undecided: the user's next new
    /// announcement forgets those decided since, where before they stayed until their reminder was edited.
    @Test func announcementsOfDecidedOccurrencesAreForgottenWithTheUsersNextOne() throws {
        let rig = try ServiceRig()
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: clock, following: logger)
        let client = rig.client(planner)
        let henning = user("henning")
        let first = clock.adding(seconds: 20 * 60), second = first.adding(seconds: 86_400), workout = clock.adding(seconds: 40 * 60)
        // A look-back of 48 hours: a session of now covers today's occurrence and tomorrow's.
        _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .mindfulness, time: first.utcTime, lookbackHours: 48))
        func logSession(_ activity: Activity, endingSecondsAgo seconds: Int64) throws {
            let end = Instant.now().adding(seconds: -seconds)
            _ = try rig.client(logger).call(Ops.sessionLog, SessionLogRequest(userId: henning, activity: activity,
                                                                               start: end.adding(seconds: -10 * 60), end: end))
        }
        func announced() throws -> [Int64] {
            try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events.filter { $0.type == Events.reminderCancelled.name }
                .compactMap { if case .occurrence(let cancelled) = $0.data { cancelled.at.millisecondsSince1970 } else { nil } }
        }
        try logSession(.mindfulness, endingSecondsAgo: 300)
        try waitUntil("today's and tomorrow's occurrences announced") { try announced().count == 2 }
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 30 * 60)).decided == 1)
        // The mindfulness session again announces nothing new, and forgets nothing; a workout does both.
        try logSession(.mindfulness, endingSecondsAgo: 240)
        _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, time: workout.utcTime))
        try logSession(.workout, endingSecondsAgo: 180)
        try waitUntil("the workout's occurrence announced") { try announced().count == 3 }
        #expect(try announced() == [first, second, workout].map(\.millisecondsSince1970))
        #expect(planner.stop())
        let file = try DatabaseQueue(path: rig.scratch.subdirectory(ServiceName.reminderPlanner.rawValue).path + "/reminder-planner.sqlite")
        defer { try? file.close() }
        #expect(try file.read { try Int64.fetchAll($0, sql: "SELECT at_ms FROM announced ORDER BY at_ms") }
                == [workout, second].map(\.millisecondsSince1970))
    }
}
