import Foundation
import LHTClient
import LHTSchema
@testable import ReminderPlanner
import ServiceHost
import ServiceTestSupport
import Testing
import TestSupport

/// The planner's writes share their batch's transaction (group commit): each changes memory at once,
/// so the next request of the batch sees it, and a refused one leaves memory as it was.
@Suite struct PlannerGroupCommitTests {
    @Test(arguments: Backend.allCases)
    func writesInOneBatchSeeEachOtherAndARefusedOneChangesNothing(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let planner = try PlannerMemoryTests.planner(rig)
        let henning = UserID("henning")!, other = UserID("other")!
        let first = RecordID(), second = RecordID()
        func frame<Input: Encodable, Output>(_ op: Op<Input, Output>, _ input: Input) throws -> IncomingRequest {
            try PlannerMemoryTests.frame(op, input)
        }
        let replies = try planner.host.process([
            frame(Ops.reminderPut, ReminderPutRequest(id: first, userId: henning, activity: .workout, time: LocalTime("09:00"))),
            frame(Ops.reminderGet, ReminderIDRequest(id: first)),
            frame(Ops.userPut, UserPutRequest(userId: henning, timeZone: ZoneID("Asia/Tokyo")!, locale: .de)),
            frame(Ops.reminderPut, ReminderPutRequest(id: first, userId: other, activity: .workout)),
            frame(Ops.reminderPut, ReminderPutRequest(id: second, userId: henning, activity: .mindfulness, time: LocalTime("20:00"))),
            frame(Ops.reminderDelete, ReminderIDRequest(id: first)),
            frame(Ops.reminderGet, ReminderIDRequest(id: first)),
        ]).map { try JSONDecoder().decode(ReplyFrame<JSONValue>.self, from: $0) }
        #expect(replies.map(\.ok) == [true, true, true, false, true, true, false])
        #expect(replies[3].error?.code == .conflict)
        #expect(replies[6].error?.code == .notFound)
        #expect(planner.reminders.count == 1 && planner.reminders[second] != nil && planner.reminders[first] == nil)
        #expect(planner.reminders.owned(by: henning).map(\.id) == [second])
        #expect(planner.user(henning).timeZone == ZoneID("Asia/Tokyo"))
        #expect(planner.scheduler.liveEntriesByRow == Dictionary(uniqueKeysWithValues: planner.reminders.rows(ownedBy: henning).map { ($0.row, 1) }))
        // The schedule follows the zone the batch set: 20:00 in Tokyo is 11:00 UTC.
        #expect(planner.scheduler.nextInstant == Instant(rfc3339: "2026-11-16T11:00:00Z"))
        withExtendedLifetime(rig) {}
    }
}
