import Foundation
import LHTClient
import LHTSchema
import Testing
import TestSupport

/// The planner and the session logger in-process: the planner on a manual clock follows the
/// logger's events and decides by them.
@Suite struct ReminderPlannerServiceTests {
    @Test(arguments: Transport.allCases)
    func aLoggedSessionCancelsTheNextOccurrenceAndTheClockSuppressesIt(_ transport: Transport) throws {
        let rig = try ServiceRig(transport)
        // The session logger checks starts against the wall clock, so the manual clock starts near it.
        let clock = Instant.now().minuteFloor
        let due = clock.adding(seconds: 30 * 60)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: clock, following: logger)
        let plannerClient = rig.client(planner), loggerClient = rig.client(logger)
        let events = try rig.recorder(planner)
        let henning = user("henning")

        _ = try plannerClient.call(Ops.userPut, UserPutRequest(userId: henning, timeZone: .utc, locale: .en))
        let meditate = try plannerClient.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .mindfulness, time: due.utcTime)).reminder
        // The control: a reminder at the same instant that no session covers.
        let workout = try plannerClient.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, time: due.utcTime)).reminder

        let end = Instant.now().adding(seconds: -5 * 60)
        let session = try loggerClient.call(Ops.sessionLog, SessionLogRequest(userId: henning, activity: .mindfulness,
                                                                             start: end.adding(seconds: -15 * 60), end: end))
        let cancelled = try events.wait(for: Events.reminderCancelled)
        #expect(cancelled.count == 1)
        guard case .occurrence(let occurrence) = cancelled.first?.data else {
            Issue.record("reminder.cancelled carries \(String(describing: cancelled.first?.data))")
            return
        }
        #expect(occurrence.reminderId == meditate.id)
        #expect(occurrence.at == due)
        #expect(occurrence.status == .cancelled)
        #expect(occurrence.cause == session.id)

        let moved = try plannerClient.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 3600))
        #expect(moved.now == clock.adding(seconds: 3600))
        #expect(moved.decided == 2)
        // Decided before the reply: the events are there to be fetched.
        let suppressed = try events.wait(for: Events.reminderSuppressed)
        let fired = try events.wait(for: Events.reminderDue)
        guard case .occurrence(let decided) = suppressed.first?.data, case .reminderDue(let dueOccurrence) = fired.first?.data else {
            Issue.record("decision events carry \(suppressed) \(fired)")
            return
        }
        #expect(suppressed.count == 1 && fired.count == 1)
        #expect(decided.reminderId == meditate.id && decided.at == due && decided.status == .suppressed && decided.cause == session.id)
        #expect(dueOccurrence.occurrence.reminderId == workout.id && dueOccurrence.occurrence.at == due)
        #expect(!dueOccurrence.test && !dueOccurrence.late)
        #expect(try plannerClient.call(Ops.health, NoFields()).counters["sessionsApplied"] == 1)
    }

    @Test func theClockOnlyMovesForwardAndClockSetDecidesOnTheWay() throws {
        let rig = try ServiceRig()
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: clock, following: logger)
        let client = rig.client(planner)
        let henning = user("henning")
        _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, time: clock.adding(seconds: 600).utcTime))

        #expect(try client.call(Ops.clockGet, NoFields()).now == clock)
        let backwards = try client.refusal(Ops.clockSet, ClockSetRequest(now: clock.adding(seconds: -1)))
        #expect(backwards.code == .invalidArgument && backwards.field == "data.now")
        // Two days on: today's occurrence and tomorrow's, each decided once.
        #expect(try client.call(Ops.clockSet, ClockSetRequest(now: clock.adding(seconds: 2 * 86_400))).decided == 2)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60)).decided == 0)
        let due = try rig.recorder(planner).wait(for: Events.reminderDue, count: 2)
        #expect(due.count == 2)
    }

    /// Decisions are a projection of the planner's log: lost with their file (a machine that went
    /// down with it open), they come back from the log, and a decided occurrence stays decided.
    @Test func decisionsComeBackFromTheLogWhenTheirFileIsLost() throws {
        let rig = try ServiceRig()
        let clock = Instant.now().minuteFloor
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
        try FileManager.default.removeItem(at: directory.appendingPathComponent("reminder-planner.projection.sqlite"))
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
}
