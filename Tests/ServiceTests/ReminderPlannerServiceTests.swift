import Foundation
import GRDB
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// The planner and the session logger in-process: the planner on a manual clock follows the
/// logger's events and decides by them. The core tests run on both backends (`Backend`); those of
/// SQLite's own files (the projection file lost) on SQLite.
@Suite struct ReminderPlannerServiceTests {
    @Test(arguments: Transport.allCases, Backend.allCases)
    func aLoggedSessionCancelsTheNextOccurrenceAndTheClockSuppressesIt(_ transport: Transport, _ backend: Backend) throws {
        let rig = try ServiceRig(transport, backend: backend)
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

    @Test(arguments: Backend.allCases)
    func theClockOnlyMovesForwardAndClockSetDecidesOnTheWay(_ backend: Backend) throws {
        let rig = try ServiceRig(backend: backend)
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

    /// `reminder.put` stores and replaces, `reminder.list` lists by time, `reminder.get` and
    /// `reminder.delete` find a reminder by id, and `reminder.upcoming` computes the occurrences in
    /// the user's zone from what is stored.
    @Test(arguments: Backend.allCases)
    func remindersArePutListedAndUpcoming(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        // Monday 2026-11-16, 07:00 in Berlin.
        let clock = Instant(rfc3339: "2026-11-16T06:00:00Z")!
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: clock, following: logger)
        let client = rig.client(planner)
        let henning = user("henning")
        let berlin = try #require(ZoneID("Europe/Berlin"))
        let settings = try client.call(Ops.userPut, UserPutRequest(userId: henning, timeZone: berlin, locale: .de))
        #expect(settings.timeZone == berlin && settings.locale == .de && !settings.paused)

        let run = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, time: LocalTime("18:00"),
                                                                       weekdays: [.mon, .wed], title: "Laufen", body: "🏃 Zeit für eine Runde")).reminder
        let noalc = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .noalc, time: LocalTime("09:00"))).reminder
        let off = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .mindfulness, time: LocalTime("07:00"),
                                                                       enabled: false)).reminder
        #expect(run.title == "Laufen" && run.weekdays == [.mon, .wed] && run.createdAt == clock)
        #expect(try client.call(Ops.reminderList, UserRequest(userId: henning)).reminders == [off, noalc, run])
        #expect(try client.call(Ops.reminderGet, ReminderIDRequest(id: run.id)) == run)

        // Replaced by id: a new time, the same creation instant.
        let moved = try client.call(Ops.reminderPut, ReminderPutRequest(id: run.id, userId: henning, activity: .workout, time: LocalTime("19:00"),
                                                                         weekdays: [.mon, .wed], title: "Laufen")).reminder
        #expect(moved.id == run.id && moved.time == LocalTime("19:00") && moved.createdAt == run.createdAt && moved.body == nil)
        #expect(try client.call(Ops.reminderList, UserRequest(userId: henning)).reminders == [off, noalc, moved])

        let upcoming = try client.call(Ops.reminderUpcoming, UpcomingRequest(userId: henning, days: 3)).occurrences
        #expect(upcoming.map(\.at) == ["2026-11-16T08:00:00Z", "2026-11-16T18:00:00Z", "2026-11-17T08:00:00Z",
                                        "2026-11-18T08:00:00Z", "2026-11-18T18:00:00Z"].map { Instant(rfc3339: $0)! })
        #expect(upcoming.map(\.reminderId) == [noalc.id, moved.id, noalc.id, noalc.id, moved.id])
        #expect(upcoming.allSatisfy { $0.status == .scheduled && $0.cause == nil })
        #expect(upcoming.first?.targetDay == day("2026-11-15"))  // a morning NoAlc reminder asks about yesterday

        let deleted = try client.call(Ops.reminderDelete, ReminderIDRequest(id: noalc.id))
        #expect(deleted.id == noalc.id)
        #expect(try client.refusal(Ops.reminderGet, ReminderIDRequest(id: noalc.id)).code == .notFound)
        #expect(try client.call(Ops.reminderList, UserRequest(userId: henning)).reminders == [off, moved])
        #expect(try client.call(Ops.reminderUpcoming, UpcomingRequest(userId: henning, days: 3)).occurrences.map(\.reminderId) == [moved.id, moved.id])
        #expect(try client.call(Ops.reminderList, UserRequest(userId: user("someone"))).reminders.isEmpty)
    }

    /// Every kind of decision, each at its trigger time: uncovered is due, covered by a session is
    /// suppressed, a paused user's is skipped; one whose instant passed while the planner was down is
    /// due late within the grace window and missed beyond it, decided at start.
    @Test(arguments: Backend.allCases)
    func decisionsAtTriggerTimeAreDueSuppressedSkippedOrMissed(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let clock = Instant.now().minuteFloor
        let at = clock.adding(seconds: 30 * 60)
        let logger = try rig.sessionLogger()
        var planner = try rig.planner(clock: clock, following: logger)
        let henning = user("henning"), paula = user("paula")
        var client = rig.client(planner)
        _ = try client.call(Ops.userPut, UserPutRequest(userId: paula, timeZone: .utc, locale: .de, paused: true))
        func put(_ userId: UserID, _ activity: Activity, _ at: Instant) throws -> Reminder {
            try client.call(Ops.reminderPut, ReminderPutRequest(userId: userId, activity: activity, time: at.utcTime)).reminder
        }
        let due = try put(henning, .workout, at), suppressed = try put(henning, .mindfulness, at), skipped = try put(paula, .workout, at)
        let end = Instant.now().adding(seconds: -5 * 60)
        let session = try rig.client(logger).call(Ops.sessionLog, SessionLogRequest(userId: henning, activity: .mindfulness,
                                                                                    start: end.adding(seconds: -10 * 60), end: end))
        let events = try rig.recorder(planner)
        #expect(try events.wait(for: Events.reminderCancelled).count == 1)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 3600)).decided == 3)

        // Two more, whose instants pass while the planner is down: 30 and 90 minutes before it starts again.
        let late = try put(henning, .workout, clock.adding(seconds: 3 * 3600))
        let missed = try put(henning, .mindfulness, clock.adding(seconds: 2 * 3600))
        #expect(planner.stop())
        planner = try rig.planner(clock: clock.adding(seconds: 3 * 3600 + 30 * 60), following: logger)
        client = rig.client(planner)

        var decisions: [RecordID: (type: String, occurrence: Occurrence, late: Bool?)] = [:]
        for event in try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events {
            switch event.data {
            case .reminderDue(let fired):
                #expect(decisions[fired.occurrence.reminderId] == nil, "decided twice")
                decisions[fired.occurrence.reminderId] = (event.type, fired.occurrence, fired.late)
            case .occurrence(let occurrence) where event.type != Events.reminderCancelled.name:
                #expect(decisions[occurrence.reminderId] == nil, "decided twice")
                decisions[occurrence.reminderId] = (event.type, occurrence, nil)
            default:
                break
            }
        }
        #expect(decisions.count == 5)
        #expect(decisions[due.id]?.type == Events.reminderDue.name && decisions[due.id]?.late == false && decisions[due.id]?.occurrence.at == at)
        #expect(decisions[suppressed.id]?.type == Events.reminderSuppressed.name && decisions[suppressed.id]?.occurrence.cause == session.id)
        #expect(decisions[skipped.id]?.type == Events.reminderSkipped.name && decisions[skipped.id]?.occurrence.status == .skipped)
        #expect(decisions[late.id]?.type == Events.reminderDue.name && decisions[late.id]?.late == true)
        #expect(decisions[missed.id]?.type == Events.reminderMissed.name && decisions[missed.id]?.occurrence.status == .missed)
        #expect(decisions[missed.id]?.occurrence.at == clock.adding(seconds: 2 * 3600))
    }

    /// Everything the planner stores outlives a restart: users, reminders, announced cancellations,
    /// restored occurrences, decisions and the clock; nothing decided before is decided again.
    @Test(arguments: Backend.allCases)
    func aRestartKeepsEverythingAndDecidesNothingTwice(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let clock = Instant.now().minuteFloor
        let logger = try rig.sessionLogger()
        var planner = try rig.planner(clock: clock, following: logger)
        var client = rig.client(planner)
        let henning = user("henning")
        let tokyo = try #require(ZoneID("Asia/Tokyo"))
        _ = try client.call(Ops.userPut, UserPutRequest(userId: henning, timeZone: tokyo, locale: .de))
        func put(_ activity: Activity, minutes: Int64) throws -> Reminder {
            let time = clock.adding(seconds: minutes * 60).local(in: tokyo).minuteOfDay
            return try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: activity,
                                                                        time: LocalTime(hour: time / 60, minute: time % 60), title: "⏰ \(minutes)")).reminder
        }
        let first = try put(.workout, minutes: 10)
        let covered = try put(.mindfulness, minutes: 20)
        let restored = try put(.mindfulness, minutes: 25)
        let end = Instant.now().adding(seconds: -5 * 60)
        let session = try rig.client(logger).call(Ops.sessionLog, SessionLogRequest(userId: henning, activity: .mindfulness,
                                                                                    start: end.adding(seconds: -10 * 60), end: end))
        #expect(try rig.recorder(planner).wait(for: Events.reminderCancelled, count: 2).count == 2)
        _ = try client.call(Ops.reminderRestore, RestoreRequest(reminderId: restored.id, at: clock.adding(seconds: 25 * 60)))
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 15 * 60)).decided == 1)

        let upcoming = UpcomingRequest(userId: henning, days: 2)
        let before = (list: try client.call(Ops.reminderList, UserRequest(userId: henning)).reminders,
                      user: try client.call(Ops.userGet, UserRequest(userId: henning)),
                      upcoming: try client.call(Ops.reminderUpcoming, upcoming).occurrences,
                      lastSeq: try client.call(Ops.health, NoFields()).lastSeq)
        #expect(before.upcoming.first { $0.reminderId == covered.id }?.status == .cancelled)
        #expect(before.upcoming.first { $0.reminderId == restored.id }?.status == .scheduled)
        #expect(planner.stop())

        planner = try rig.planner(clock: clock, following: logger)
        client = rig.client(planner)
        #expect(try client.call(Ops.clockGet, NoFields()).now == clock.adding(seconds: 15 * 60))
        #expect(try client.call(Ops.reminderList, UserRequest(userId: henning)).reminders == before.list)
        #expect(try client.call(Ops.userGet, UserRequest(userId: henning)) == before.user)
        #expect(try client.call(Ops.reminderUpcoming, upcoming).occurrences == before.upcoming)
        #expect(try client.call(Ops.health, NoFields()).lastSeq == before.lastSeq)

        // On: the covered occurrence is suppressed by the session, the restored one fires, the first is not decided again.
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 45 * 60)).decided == 2)
        #expect(planner.stop())
        planner = try rig.planner(clock: clock, following: logger)
        client = rig.client(planner)
        #expect(try client.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60)).decided == 0)

        var decided: [String: [String]] = [:]
        for event in try client.call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1000)).events {
            let occurrence: Occurrence? = switch event.data {
            case .reminderDue(let fired): fired.occurrence
            case .occurrence(let occurrence) where event.type != Events.reminderCancelled.name && event.type != Events.reminderRestored.name: occurrence
            default: nil
            }
            if let occurrence {
                decided["\(occurrence.reminderId) \(occurrence.at)", default: []].append(event.type)
                if occurrence.status == .suppressed { #expect(occurrence.cause == session.id) }
            }
        }
        #expect(decided == ["\(first.id) \(clock.adding(seconds: 10 * 60))": [Events.reminderDue.name],
                            "\(covered.id) \(clock.adding(seconds: 20 * 60))": [Events.reminderSuppressed.name],
                            "\(restored.id) \(clock.adding(seconds: 25 * 60))": [Events.reminderDue.name]])
    }
}
