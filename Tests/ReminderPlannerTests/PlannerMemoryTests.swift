import Foundation
import GRDB
import LHTClient
import LHTSchema
@testable import ReminderPlanner
@testable import ServiceHost
import ServiceTestSupport
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// `user.put` against a planner built on the test's thread and served through `host.process`, so
/// its scheduler can be looked at: a user with 1,000 reminders put again and again.
@Suite struct PlannerMemoryTests {
    static let start = Instant(rfc3339: "2026-11-16T00:00:00Z")!

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
            while let (row, next) = scheduler.popNext(through: PlannerMemoryTests.start.adding(seconds: 8 * 86_400)) {
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
        let created = PlannerMemoryTests.start.adding(seconds: -86_400)
        let expected = (0..<60).map { index in
            Reminder(id: RecordID(), userId: UserID(users[index % 2].0)!, activity: [Activity.workout, .mindfulness, .noalc][index % 3],
                     time: LocalTime(hour: index % 24, minute: index * 7 % 60)!,
                     weekdays: index % 5 == 0 ? [] : Weekday.allCases.filter { ($0.index + index) % 3 != 0 },
                     lookbackHours: 1 + index % 48, enabled: index % 4 != 0, title: index % 6 == 0 ? "Titel \(index)" : nil,
                     body: index % 9 == 0 ? "Text \(index)" : nil, createdAt: created.adding(seconds: Int64(index)))
        }
        let database = try DatabaseQueue(path: rig.scratch.subdirectory("planner").appendingPathComponent("reminder-planner.sqlite").path)
        var migrator = DatabaseMigrator()
        migrator.register(EventLog.sqliteMigrations)
        migrator.register(PlannerStore.sqliteMigrations)
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
