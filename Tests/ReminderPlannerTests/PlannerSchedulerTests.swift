import Foundation
import LHTSchema
@testable import ReminderPlanner
import Testing
import TestSupport

/// The planner's scheduler holds one live entry per reminder however often it is rescheduled, and
/// its memory follows the number of reminders, not the number of edits (a `user.put` must not push
/// a fresh entry for each of the user's reminders).
@Suite struct PlannerSchedulerTests {
    static let start = Instant(rfc3339: "2026-11-16T00:00:00Z")!
    static let zones = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC"].map { ZoneID($0)! }

    static func reminder(_ minute: Int, id: RecordID = RecordID(), enabled: Bool = true) -> Reminder {
        Reminder(id: id, userId: UserID("sched")!, activity: .workout, time: LocalTime(hour: minute / 60 % 24, minute: minute % 60)!,
                 weekdays: Weekday.allCases, lookbackHours: 12, enabled: enabled, title: nil, body: nil, createdAt: start)
    }

    /// The deciding loop takes a popped row's reminder with its user's settings by the row (no
    /// lookup by user id), and the scheduler names the two rows it pops next, which the table
    /// prefetches, with its user's latest session ends. A user keeps settings without reminders, and forgets them.
    @Test func aPoppedRowGivesItsReminderWithItsUsersSettingsAndNamesTheNextTwo() {
        var table = ReminderTable(), scheduler = Scheduler()
        let users = ["ada", "bo", "cy"].map { UserID($0)! }
        let berlin = UserSettings(userId: users[0], timeZone: ZoneID("Europe/Berlin")!, locale: .de, paused: true)
        table.setSettings(UserSettings(userId: users[2], timeZone: .utc, locale: .en, paused: false), of: users[2])
        table.setSettings(nil, of: UserID("never")!)
        for n in 0..<5 {
            let reminder = Reminder(id: RecordID(), userId: users[n % 2], activity: .workout, time: LocalTime(hour: 9, minute: 0)!,
                                    weekdays: Weekday.allCases, lookbackHours: 12, enabled: true, title: nil, body: nil, createdAt: Self.start)
            scheduler.schedule(reminder, row: table.insert(reminder), zone: .utc, from: Self.start)
        }
        table.setSettings(berlin, of: users[0])
        table.noteLogged(by: users[1]) { $0.logged(sessionOf: .workout, endingAt: 5) }
        table.noteLogged(by: UserID("dee")!) { $0.logged(sessionOf: .mindfulness, endingAt: 3) }
        #expect(table.users == [users[2], users[0], users[1]], "in the order first met; never one who set nothing or only logged")
        #expect(table.latestLogged(by: UserID("dee")!).maySessionEnd(.mindfulness, atOrAfter: 3))

        var popped: [Scheduler.Row] = [], named: [(next: Scheduler.Row?, after: Scheduler.Row?)] = []
        while let (row, _) = scheduler.popNext(through: Self.start.adding(seconds: 10 * 3600)) {
            named.append(scheduler.upcomingRows)
            let (reminder, settings, latest) = table.deciding(row, next: named.last!.next, after: named.last!.after)
            #expect(reminder.userId == users[Int(row) % 2])
            #expect(settings == (row % 2 == 0 ? berlin : nil))
            #expect(latest.maySessionEnd(.workout, atOrAfter: 5) == (row % 2 == 1))
            popped.append(row)
        }
        #expect(popped == [0, 1, 2, 3, 4])
        for (index, rows) in named.enumerated() {
            #expect(rows.next == popped.dropFirst(index + 1).first && rows.after == popped.dropFirst(index + 2).first)
        }

        table.setSettings(nil, of: users[0])
        table.setSettings(nil, of: users[2])
        #expect(table.settings(of: users[0]) == nil && table.deciding(0, next: nil, after: nil).settings == nil)
        #expect(table.users == [users[0], users[1]], "a user with reminders stays; one with nothing goes")
    }

    @Test func reschedulingOneReminderManyTimesLeavesOneLiveEntry() {
        var scheduler = Scheduler()
        let reminder = Self.reminder(9 * 60)
        // The same occurrence again and again (what user.put did to every reminder of the user).
        for _ in 0..<1000 { scheduler.schedule(reminder, row: 0, zone: .utc, from: Self.start) }
        #expect(scheduler.entryCount == 1)
        #expect(scheduler.liveEntriesByRow == [0: 1])
        // Another instant each time (a zone change back and forth): one live entry, stale ones bounded.
        for round in 0..<1000 { scheduler.schedule(reminder, row: 0, zone: Self.zones[round % Self.zones.count], from: Self.start) }
        #expect(scheduler.liveEntriesByRow == [0: 1])
        #expect(scheduler.entryCount <= 2 + Scheduler.compactionSlack)
        // Unscheduled (disabled, deleted): no live entry, and its stale ones go too.
        scheduler.schedule(Self.reminder(9 * 60, id: reminder.id, enabled: false), row: 0, zone: .utc, from: Self.start)
        #expect(scheduler.liveEntriesByRow.isEmpty)
        #expect(scheduler.scheduledCount == 0)
        #expect(scheduler.popNext(through: Self.start.adding(seconds: 400 * 86_400)) == nil)
        #expect(scheduler.entryCount == 0)
    }

    /// A row the table gives to another reminder after unscheduling the one before: only the new
    /// reminder comes out, and the old one's entry (earlier, still in the queue) never does.
    @Test func aReusedRowSchedulesOnlyItsNewReminder() {
        var scheduler = Scheduler()
        let deleted = Self.reminder(8 * 60), next = Self.reminder(10 * 60), neighbour = Self.reminder(9 * 60)
        scheduler.schedule(deleted, row: 0, zone: .utc, from: Self.start)
        scheduler.schedule(neighbour, row: 1, zone: .utc, from: Self.start)
        scheduler.unschedule(0)
        scheduler.unschedule(0)  // twice is harmless
        scheduler.schedule(next, row: 0, zone: .utc, from: Self.start)
        #expect(scheduler.scheduledCount == 2)
        var popped: [(Scheduler.Row, LocalTime)] = []
        while let (row, occurrence) = scheduler.popNext(through: Self.start.adding(seconds: 86_400 - 1)) {
            popped.append((row, occurrence.localTime))
        }
        #expect(popped.map(\.0) == [1, 0])
        #expect(popped.map(\.1) == [LocalTime(hour: 9, minute: 0)!, LocalTime(hour: 10, minute: 0)!])
        #expect(scheduler.scheduledCount == 0)
    }

    /// Entries keep a ticket's low 32 bits: a stale entry whose bits match the ticket its row holds now
    /// (2^32 pushes later) still does not come out, since its instant is not the row's.
    @Test func aStaleEntryWithTheLiveTicketsLowBitsNeverComesOut() {
        var scheduler = Scheduler()
        scheduler.schedule(Self.reminder(7 * 60), row: 1, zone: .utc, from: Self.start)  // ticket 1, on top
        scheduler.schedule(Self.reminder(8 * 60), row: 0, zone: .utc, from: Self.start)  // ticket 2
        // Row 0 rescheduled to 10:00 with ticket 2 + 2^32: its 08:00 entry, stale, stays in the queue.
        scheduler.lastTicket += 1 << 32 - 1
        scheduler.schedule(Self.reminder(10 * 60), row: 0, zone: .utc, from: Self.start)
        #expect(scheduler.entryCount == 3)
        #expect(scheduler.liveEntriesByRow == [0: 1, 1: 1])
        var popped: [(Scheduler.Row, LocalTime)] = []
        while let (row, occurrence) = scheduler.popNext(through: Self.start.adding(seconds: 9 * 3600)) { popped.append((row, occurrence.localTime)) }
        #expect(popped.map(\.0) == [1])
        while let (row, occurrence) = scheduler.popNext(through: Self.start.adding(seconds: 86_400 - 1)) { popped.append((row, occurrence.localTime)) }
        #expect(popped.map(\.0) == [1, 0])
        #expect(popped.map(\.1) == [LocalTime(hour: 7, minute: 0)!, LocalTime(hour: 10, minute: 0)!])
    }

    /// The scheduler's queue against a model: elements put before, into and after the minute being
    /// taken, and queues built at once, always come out smallest first.
    @Test func theMinuteQueueGivesBackItsElementsInOrder() {
        var random = SplitMix64(seed: 0x4EA9_2026)
        for size in [0, 1, 2, 5, 17, 1000] {
            let elements = (0..<size).map { _ in Tenths(Int64(random.next() % 500)) }
            var built = MinuteQueue(elements), drained: [Tenths] = []
            while let smallest = built.removeMin() { drained.append(smallest) }
            #expect(drained == elements.sorted())
        }
        var queue = MinuteQueue<Tenths>(), model: [Tenths] = []
        for _ in 0..<20_000 {
            switch random.next() % 3 {
            case 0, 1:
                // Around the smallest so far: the same minute, earlier ones and later ones.
                let element = Tenths(Int64(model.min()?.value ?? 500) + Int64(random.next() % 60) - 20)
                queue.insert(element)
                model.append(element)
            default:
                #expect(queue.removeMin() == model.min())
                if let smallest = model.min() { model.remove(at: model.firstIndex(of: smallest)!) }
            }
            #expect(queue.min == model.min())
            #expect(queue.count == model.count)
        }
        #expect(queue.unordered.sorted() == model.sorted())
    }

    /// Ten to a minute.
    struct Tenths: MinuteOrdered {
        let value: Int64
        init(_ value: Int64) { self.value = value }
        var minute: Int64 { value >= 0 ? value / 10 : (value - 9) / 10 }
        static func < (lhs: Tenths, rhs: Tenths) -> Bool { lhs.value < rhs.value }
    }

    /// Many reminders rescheduled at random, then everything popped: each reminder's occurrences come
    /// out once each, in time order, and the queue never outgrows twice the live entries (plus slack).
    @Test func randomReschedulingKeepsDecisionsOnceAndInTimeOrder() {
        var random = SplitMix64(seed: 0x5EED_2026)
        var scheduler = Scheduler()
        var reminders: [Reminder] = (0..<300).map { _ in Self.reminder(Int(random.next() % 1440)) }
        var zones: [RecordID: ZoneID] = [:]
        var largest = 0
        for _ in 0..<20_000 {
            let index = Int(random.next() % UInt64(reminders.count))
            if random.next() % 10 == 0 {
                // An edit: a new time, same id.
                reminders[index] = Self.reminder(Int(random.next() % 1440), id: reminders[index].id)
            }
            let zone = Self.zones[Int(random.next() % UInt64(Self.zones.count))]
            zones[reminders[index].id] = zone
            scheduler.schedule(reminders[index], row: Scheduler.Row(index), zone: zone, from: Self.start)
            largest = max(largest, scheduler.entryCount)
        }
        #expect(largest <= 2 * reminders.count + Scheduler.compactionSlack)
        #expect(scheduler.liveEntriesByRow.count == Set(zones.keys).count)
        #expect(scheduler.liveEntriesByRow.values.allSatisfy { $0 == 1 })

        // Decide three days, rescheduling after each pop as the planner does.
        let through = Self.start.adding(seconds: 3 * 86_400)
        var popped: [(RecordID, Instant)] = []
        while let (row, occurrence) = scheduler.popNext(through: through) {
            let id = reminders[Int(row)].id
            popped.append((id, occurrence.at))
            scheduler.schedule(reminders[Int(row)], row: row, zone: zones[id]!, from: occurrence.at.adding(milliseconds: 1))
        }
        #expect(popped.map(\.1) == popped.map(\.1).sorted())
        #expect(Set(popped.map { "\($0.0)@\($0.1)" }).count == popped.count)
        // Every scheduled reminder fires at least twice in three days (daily, whatever the zone).
        let firings = Dictionary(grouping: popped, by: \.0)
        #expect(firings.count == zones.count, "every scheduled reminder fired")
        #expect(firings.values.allSatisfy { $0.count >= 2 })
    }
}
