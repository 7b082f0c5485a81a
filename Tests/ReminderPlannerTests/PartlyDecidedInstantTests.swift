import Foundation
import LHTSchema
@testable import ReminderPlanner
@testable import ServiceHost
import ServiceTestSupport
@testable import Storage
import Testing
import TestSupport

/// A clock step that stops within an instant leaves it partly decided (`PartlyDecidedInstant`).
/// Where decisions are applied behind the log (SQLite), deciding does not read them back: memory
/// must know what this process decided there, and the stored decisions what an earlier one did.
@Suite struct PartlyDecidedInstantTests {
    /// Six reminders at one instant, decided two a step. After the first step every reminder is
    /// scheduled again (a `user.put` each), from that instant; after the second the planner
    /// restarts. Each occurrence is decided exactly once: six `reminder.due` events, one per reminder.
    @Test(arguments: Backend.allCases)
    func anOccurrenceAtAPartlyDecidedInstantIsDecidedOnce(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let start = PlannerMemoryTests.start, end = start.adding(seconds: 3600)
        let instant = start.adding(seconds: 600)
        let users = (0..<6).map { UserID("partly\($0)")! }
        let first = try PlannerMemoryTests.planner(rig)
        first.clockStepOccurrences = 2
        try Self.process(first, users.map { try PlannerMemoryTests.frame(Ops.reminderPut, ReminderPutRequest(
            userId: $0, activity: .workout, time: LocalTime(hour: 0, minute: 10)!)) })

        var step = try first.decideStep(from: start, through: end)
        #expect(step.decided == 2 && !step.finished && step.reached == instant.adding(milliseconds: -1))
        // Scheduled again from the partly decided instant, the two decided reminders come up there once more.
        try Self.process(first, users.map { try PlannerMemoryTests.frame(Ops.userPut, UserPutRequest(userId: $0, timeZone: .utc, locale: .de)) })
        #expect(first.scheduler.scheduledCount == users.count)
        step = try first.decideStep(from: step.reached, through: end)
        var decided = 2 + step.decided
        #expect(!step.finished && step.reached == instant.adding(milliseconds: -1))

        // A restart: the instant is still partly decided, by a process that is gone.
        first.host.store.close()
        let restarted = try PlannerMemoryTests.planner(rig)
        restarted.clockStepOccurrences = 2
        var reached = step.reached
        repeat {
            step = try restarted.decideStep(from: reached, through: end)
            decided += step.decided
            reached = step.reached
        } while !step.finished
        #expect(decided == users.count)
        let log = try restarted.host.query {
            try restarted.host.store.eventLog.since(EventsSinceRequest(after: 0, limit: 1000), for: nil, publisher: .reminderPlanner, in: $0)
        }
        let due = try WireJSON.decode(EventsSinceReply.self, from: log).events.filter { $0.type == Events.reminderDue.name }
        let reminders = due.compactMap { event -> RecordID? in
            guard case .reminderDue(let occurrence)? = event.data, occurrence.occurrence.at == instant else { return nil }
            return occurrence.occurrence.reminderId
        }
        #expect(reminders.count == users.count && Set(reminders).count == users.count, "\(reminders)")
        withExtendedLifetime(rig) {}
    }

    /// A read of the decisions in the transaction that took them sees them, though the thread that
    /// applies them behind the log gets them only once it commits.
    @Test(arguments: Backend.allCases)
    func decisionsTakenInATransactionAreReadInIt(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let start = PlannerMemoryTests.start, instant = start.adding(seconds: 600)
        let planner = try PlannerMemoryTests.planner(rig)
        try Self.process(planner, [try PlannerMemoryTests.frame(Ops.reminderPut, ReminderPutRequest(
            userId: UserID("partly")!, activity: .workout, time: LocalTime(hour: 0, minute: 10)!))])
        let reminder = try #require(planner.reminders.owned(by: UserID("partly")!).first)
        try planner.host.write { tx throws in
            #expect(try planner.decisions(of: reminder.id, from: start, through: instant, tx).isEmpty)
            #expect(try planner.decideStep(from: start, through: instant).decided == 1)
            #expect(try planner.decisions(of: reminder.id, from: start, through: instant, tx)[instant.millisecondsSince1970]?.status == .fired)
        }
        withExtendedLifetime(rig) {}
    }

    static func process(_ planner: ReminderPlanner, _ requests: [IncomingRequest]) throws {
        for reply in planner.host.process(requests) { #expect(reply.starts(with: Data(#"{"v":1,"ok":true"#.utf8)), "\(String(decoding: reply, as: UTF8.self))") }
    }
}
