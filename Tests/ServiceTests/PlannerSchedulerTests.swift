import Foundation
import GRDB
import LHTClient
import LHTSchema
@testable import ReminderPlanner
@testable import ServiceHost
@testable import Storage
import Testing
import TestSupport

/// The planner's scheduler holds one live entry per reminder however often it is rescheduled, and
/// its memory follows the number of reminders, not the number of edits (red-team finding 2:
/// every `user.put` used to push a fresh entry for each of the user's reminders).
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
        #expect(Dictionary(grouping: popped, by: \.0).values.allSatisfy { $0.count >= 2 })
    }
}

/// `user.put` against a planner built on the test's thread and served through `host.process`, so
/// its scheduler can be looked at: a user with 1,000 reminders put again and again.
@Suite struct PlannerMemoryTests {
    static func residentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return .nan }
        return kilobytes / 1024
    }

    /// A planner on a manual clock following a session logger, both in `rig` (on its PostgreSQL, if
    /// it has one), not running its loop: the tests drive it through `host.process` and read its memory.
    static func planner(_ rig: ServiceRig) throws -> ReminderPlanner {
        let logger = try rig.sessionLogger()
        let options = try PlannerOptions.parse([
            "--api", rig.endpoint("planner-api"), "--events", rig.endpoint("planner-events"),
            "--data-dir", rig.scratch.subdirectory("planner").path, "--clock", "manual:2026-11-16T00:00:00Z",
            "--session-logger-api", logger.api, "--session-logger-events", logger.events,
        ] + (rig.postgres.map { ["--database", $0.url] } ?? []))
        return try ReminderPlanner(settings: PlannerSettings(options), logger: quietLogger("reminder-planner"), context: rig.context)
    }

    static func frame<Input: Encodable, Output>(_ op: Op<Input, Output>, _ input: Input) throws -> IncomingRequest {
        IncomingRequest(frame: try WireJSON.encode(RequestFrame(op: op.name, data: input)))
    }

    /// `LHT_TEST_PLANNER_PUTS` (default 300) sets how many puts; 4000 reproduces the finding's figure.
    @Test func repeatedUserPutsDoNotGrowTheSchedule() throws {
        let puts = ProcessInfo.processInfo.environment["LHT_TEST_PLANNER_PUTS"].flatMap(Int.init) ?? 300
        let rig = try ServiceRig(.inproc)
        let planner = try Self.planner(rig)
        let henning = UserID("henning")!
        let reminders = try (0..<1000).map { index in
            try Self.frame(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: index % 2 == 0 ? .workout : .mindfulness,
                                                               time: LocalTime(hour: index / 60 % 24, minute: index % 60)!))
        }
        for reply in planner.host.process(reminders) { #expect(reply.starts(with: Data(#"{"v":1,"ok":true"#.utf8))) }
        #expect(planner.scheduler.scheduledCount == 1000)

        let put = try Self.frame(Ops.userPut, UserPutRequest(userId: henning, timeZone: ZoneID("Europe/Berlin")!, locale: .de))
        _ = planner.host.process([put])
        let before = Self.residentMegabytes()
        let started = Date()
        for _ in 0..<puts { _ = planner.host.process([put]) }
        let seconds = Date().timeIntervalSince(started)
        let grown = Self.residentMegabytes() - before
        print(String(format: "planner memory: %d user.put of a user with 1000 reminders: resident memory %+.1f MB (%.1f KB per put), %.1f ms per put; %d queue entries",
                     puts, grown, grown * 1024 / Double(puts), seconds * 1000 / Double(puts), planner.scheduler.entryCount))
        #expect(planner.scheduler.entryCount <= 2 * 1000 + Scheduler.compactionSlack)
        #expect(planner.scheduler.liveEntriesByRow.count == 1000)
        #expect(planner.scheduler.liveEntriesByRow.values.allSatisfy { $0 == 1 })
        withExtendedLifetime(rig) {}
    }
}

/// A planner starting over stored reminders streams them, in batches, into its table and its
/// schedule (`PlannerStore.streamReminders`): from SQLite on another thread, from PostgreSQL in pages.
@Suite struct PlannerLoadingTests {
    /// More reminders than the loader keeps in flight (eight batches of 1024) and than a PostgreSQL
    /// page (10,000), users interleaved row by row and in four zones, some disabled, some on a few
    /// weekdays, some with a title: the restarted planner holds and schedules exactly what the one
    /// that stored them did.
    @Test(arguments: Backend.allCases)
    func aRestartedPlannerHoldsAndSchedulesWhatWasStored(_ backend: Backend) throws {
        let count = 10_500
        let rig = try ServiceRig(.inproc, backend: backend)
        let first = try PlannerMemoryTests.planner(rig)
        let users = (0..<40).map { UserID("load\($0)")! }
        let zones = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"].map { ZoneID($0)! }
        var requests = try users.enumerated().map { index, user in
            try PlannerMemoryTests.frame(Ops.userPut, UserPutRequest(userId: user, timeZone: zones[index % zones.count], locale: .en))
        }
        for index in 0..<count {
            requests.append(try PlannerMemoryTests.frame(Ops.reminderPut, ReminderPutRequest(
                userId: users[index % users.count], activity: [Activity.workout, .mindfulness, .noalc][index % 3],
                // Odd minutes: no occurrence falls on the clock's instant, which a start-up decides.
                time: LocalTime(hour: index / 30 % 24, minute: index % 30 * 2 + 1)!,
                weekdays: index % 4 == 0 ? Weekday.allCases.filter { ($0.index + index) % 3 == 0 } : nil,
                enabled: index % 7 != 0, title: index % 5 == 0 ? "Nr. \(index)" : nil)))
        }
        for chunk in stride(from: 0, to: requests.count, by: 500) {
            for reply in first.host.process(Array(requests[chunk..<min(chunk + 500, requests.count)])) {
                #expect(reply.starts(with: Data(#"{"v":1,"ok":true"#.utf8)))
            }
        }

        // Its memory stays for the comparison; its store goes (on PostgreSQL, one instance at a time).
        first.host.store.close()
        let restarted = try PlannerMemoryTests.planner(rig)
        #expect(restarted.reminders.count == count)
        for user in users { #expect(Set(restarted.reminders.owned(by: user)) == Set(first.reminders.owned(by: user))) }
        // Each scheduled reminder's next occurrence, popped from copies of both schedules (in time
        // order; reminders at one instant come out by row, which loading may give out in another order).
        func nextOccurrences(_ planner: ReminderPlanner) -> [String] {
            var scheduler = planner.scheduler
            var popped: [(at: Instant, text: String)] = []
            while let (row, next) = scheduler.popNext(through: PlannerSchedulerTests.start.adding(seconds: 8 * 86_400)) {
                #expect(popped.last.map { $0.at <= next.at } ?? true)
                popped.append((next.at, "\(planner.reminders[row: row].id) \(next.at) \(next.day) \(next.localTime)"))
            }
            return popped.map(\.text).sorted()
        }
        let expected = nextOccurrences(first)
        #expect(expected.count == (0..<count).count { $0 % 7 != 0 })
        #expect(nextOccurrences(restarted) == expected)
        if backend == .sqlite {
            // Loading read through a small page cache and gave the connection its own back.
            #expect(try restarted.host.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -SQLiteStore.cacheKilobytes)
        }
        withExtendedLifetime(rig) {}
    }

    /// A database written before reminder rows were compact (the id as text, `HH:mm`, a list of
    /// weekday names) is migrated on start, through the compact rows to the rule column: every
    /// reminder comes back as it was stored, is scheduled, and can be replaced and deleted by id
    /// afterwards; a row whose id, activity or time does not parse, which the old loader skipped
    /// too, is not carried over; and the file keeps no page the old tables held.
    @Test func remindersStoredBeforeCompactRowsAreMigrated() throws {
        let rig = try ServiceRig(.inproc)
        let users = [("old1", "Europe/Berlin"), ("old2", "America/New_York")]
        let created = PlannerSchedulerTests.start.adding(seconds: -86_400)
        let expected = (0..<60).map { index in
            Reminder(id: RecordID(), userId: UserID(users[index % 2].0)!, activity: [Activity.workout, .mindfulness, .noalc][index % 3],
                     time: LocalTime(hour: index % 24, minute: index * 7 % 60)!,
                     weekdays: index % 5 == 0 ? [] : Weekday.allCases.filter { ($0.index + index) % 3 != 0 },
                     lookbackHours: 1 + index % 48, enabled: index % 4 != 0, title: index % 6 == 0 ? "Titel \(index)" : nil,
                     body: index % 9 == 0 ? "Text \(index)" : nil, createdAt: created.adding(seconds: Int64(index)))
        }
        let database = try DatabaseQueue(path: rig.scratch.subdirectory("planner").appendingPathComponent("reminder-planner.sqlite").path)
        var migrator = DatabaseMigrator()
        EventLog.migrate(&migrator)
        PlannerStore.migrate(&migrator)
        try migrator.migrate(database, upTo: "planner")
        try database.write { db in
            for (user, zone) in users {
                try db.execute(sql: "INSERT INTO user (user_id, time_zone, locale, paused) VALUES (?, ?, 'de', 0)", arguments: [user, zone])
            }
            for (index, reminder) in expected.enumerated() {
                // As the old `save` wrote them, the weekdays in reverse order for once, one id in capitals.
                let id = index == 1 ? reminder.id.description.uppercased() : reminder.id.description
                try db.execute(sql: """
                    INSERT INTO reminder (id, user_id, activity, time, weekdays, lookback_hours, enabled, title, body, created_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, reminder.userId.rawValue, reminder.activity.rawValue, reminder.time.description,
                                     reminder.weekdays.reversed().map(\.rawValue).joined(separator: ","), reminder.lookbackHours,
                                     reminder.enabled, reminder.title, reminder.body, reminder.createdAt.millisecondsSince1970])
            }
            for (id, activity, time) in [("not-an-id", "workout", "08:00"), (RecordID().description, "yoga", "08:00"),
                                         (RecordID().description, "workout", "25:00")] {
                try db.execute(sql: """
                    INSERT INTO reminder (id, user_id, activity, time, weekdays, lookback_hours, enabled, title, body, created_at_ms)
                    VALUES (?, 'old1', ?, ?, 'mon', 12, 1, NULL, NULL, 0)
                    """, arguments: [id, activity, time])
            }
        }
        try database.close()

        let migrated = try PlannerMemoryTests.planner(rig)
        #expect(migrated.reminders.count == expected.count)
        for reminder in expected { #expect(migrated.reminders[reminder.id] == reminder) }
        // Every enabled reminder with a weekday has its next occurrence scheduled.
        #expect(migrated.scheduler.scheduledCount == expected.count { $0.enabled && !$0.weekdays.isEmpty })
        #expect(try migrated.host.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM reminder") } == expected.count)
        // The tables the migrations replaced left no free pages behind.
        #expect(try migrated.host.read { try Int.fetchOne($0, sql: "PRAGMA freelist_count") } == 0)
        // The view shows the rule column's fields as the compact rows had them.
        let columns = try migrated.host.read { db in
            try Row.fetchOne(db, sql: """
                SELECT typeof(id) AS id, activity, minute_of_day, weekday_mask, lookback_hours, enabled FROM reminder_fields WHERE id = ?
                """, arguments: [expected[7].id.bytes])
        }
        #expect(columns?["id"] as String? == "blob")
        #expect(columns?["activity"] as String? == expected[7].activity.rawValue)
        #expect(columns?["minute_of_day"] as Int? == 7 * 60 + 49)
        #expect(columns?["weekday_mask"] as Int? == expected[7].weekdays.reduce(0) { $0 | 1 << $1.index })
        #expect(columns?["lookback_hours"] as Int? == expected[7].lookbackHours)
        #expect(columns?["enabled"] as Bool? == expected[7].enabled)

        let replaced = ReminderPutRequest(id: expected[2].id, userId: expected[2].userId, activity: expected[2].activity,
                                          time: LocalTime(hour: 6, minute: 30)!, weekdays: [.sat], title: "neu")
        let replies = migrated.host.process([try PlannerMemoryTests.frame(Ops.reminderPut, replaced),
                                             try PlannerMemoryTests.frame(Ops.reminderDelete, ReminderIDRequest(id: expected[3].id))])
        for reply in replies { #expect(reply.starts(with: Data(#"{"v":1,"ok":true"#.utf8))) }
        let restarted = try PlannerMemoryTests.planner(rig)
        #expect(restarted.reminders.count == expected.count - 1)
        #expect(restarted.reminders[expected[3].id] == nil)
        #expect(restarted.reminders[expected[2].id]?.time == LocalTime(hour: 6, minute: 30))
        #expect(restarted.reminders[expected[2].id]?.weekdays == [.sat])
        #expect(restarted.reminders[expected[2].id]?.title == "neu")
        for reminder in expected where reminder.id != expected[2].id && reminder.id != expected[3].id {
            #expect(restarted.reminders[reminder.id] == reminder)
        }
        withExtendedLifetime(rig) {}
    }
}
