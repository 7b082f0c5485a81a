import Foundation
import GRDB
import LHTClient
import LHTSchema
import ServiceTestSupport
import Testing
import TestSupport

/// Hostile and damaged input through real services in-process: free text kept exactly and U+0000
/// refused, NoAlc days bounded by the wall clock, unreadable stored rows skipped, and streak.get's
/// today in the user's zone.
@Suite struct HardeningServiceTests {
    let henning = user("henning")
    /// Emoji with a zero-width joiner, a combining mark, the line and paragraph separators, a tab,
    /// control characters, quotes and backslashes: everything but U+0000 is kept byte for byte.
    static let awkward = "🧘‍♀️ e\u{301} \u{2028}x\u{2029}\tend\u{1}\u{7F} \"\\/ 𝄞"

    @Test(arguments: Backend.allCases)
    func sessionSourceRoundTripsExactlyAndNULIsRefused(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let start = Instant.now().adding(seconds: -3600)
        let receipt = try client.call(Ops.sessionLog, SessionLogRequest(
            userId: henning, activity: .mindfulness, start: start, end: start.adding(seconds: 600), source: Self.awkward))
        let listed = try client.call(Ops.sessionList, SessionListRequest(userId: henning, from: start, until: start.adding(seconds: 1)))
        #expect(listed.sessions.map { $0.source.map { Array($0.utf8) } } == [Array(Self.awkward.utf8)])
        let since = try client.call(Ops.eventsSince, EventsSinceRequest(after: 0))
        guard case .sessionLogged(let logged) = since.events.last?.data else { Issue.record("no session.logged"); return }
        #expect(logged.id == receipt.id && logged.source.map { Array($0.utf8) } == Array(Self.awkward.utf8))

        for source in ["a\u{0}b", "\u{0}", "watch\u{0}"] {
            let refused = try client.refusal(Ops.sessionLog, SessionLogRequest(
                userId: henning, activity: .workout, start: start, end: start.adding(seconds: 60), source: source))
            #expect(refused.code == .invalidArgument && refused.field == "data.source", "\(refused)")
            let noalc = try client.refusal(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01"), level: .easy, source: source))
            #expect(noalc.code == .invalidArgument && noalc.field == "data.source", "\(noalc)")
        }
        #expect(try client.call(Ops.eventsSince, EventsSinceRequest(after: 0)).lastSeq == 1, "a refused request stores nothing")
    }

    @Test(arguments: Backend.allCases)
    func reminderTitleRoundTripsExactlyAndNULIsRefused(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let logger = try rig.sessionLogger()
        let planner = try rig.planner(clock: Instant(rfc3339: "2026-11-23T10:00:00Z")!, following: logger)
        let client = rig.client(planner)
        let put = try client.call(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, title: Self.awkward, body: Self.awkward))
        let got = try client.call(Ops.reminderGet, ReminderIDRequest(id: put.reminder.id))
        #expect(got.title.map { Array($0.utf8) } == Array(Self.awkward.utf8))
        #expect(got.body.map { Array($0.utf8) } == Array(Self.awkward.utf8))
        let listed = try client.call(Ops.reminderList, UserRequest(userId: henning))
        #expect(listed.reminders.map { $0.title.map { Array($0.utf8) } } == [Array(Self.awkward.utf8)])

        let title = try client.refusal(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, title: "Work\u{0}out"))
        #expect(title.code == .invalidArgument && title.field == "data.title", "\(title)")
        let body = try client.refusal(Ops.reminderPut, ReminderPutRequest(userId: henning, activity: .workout, body: "\u{0}"))
        #expect(body.code == .invalidArgument && body.field == "data.body", "\(body)")
        #expect(try client.call(Ops.reminderList, UserRequest(userId: henning)).reminders.count == 1)

        // As stored: read back by a planner started again.
        #expect(planner.stop())
        let restarted = try rig.planner(clock: Instant(rfc3339: "2026-11-23T10:00:00Z")!, following: logger)
        let stored = try rig.client(restarted).call(Ops.reminderGet, ReminderIDRequest(id: put.reminder.id))
        #expect(stored.title.map { Array($0.utf8) } == Array(Self.awkward.utf8))
        #expect(stored.body.map { Array($0.utf8) } == Array(Self.awkward.utf8))
    }

    @Test(arguments: Backend.allCases)
    func noAlcDaysAreBoundedByTheWallClock(_ backend: Backend) throws {
        let rig = try ServiceRig(.inproc, backend: backend)
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let today = Instant.now().local(in: ZoneID.utc).day
        for bad in [today.adding(days: 2), day("9999-12-31"), day("1999-12-31"), day("0001-01-01")] {
            let refused = try client.refusal(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: bad, level: .steady))
            #expect(refused.code == .invalidArgument && refused.field == "data.day", "\(bad): \(refused)")
        }
        for good in [day("2000-01-01"), today.adding(days: -1), today, today.adding(days: 1)] {
            _ = try client.call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: good, level: .steady))
        }
    }

    @Test func unreadableSessionLoggerRowsAreSkippedLoggedAndCounted() throws {
        let rig = try ServiceRig(.inproc)
        let directory = rig.scratch.subdirectory("session-logger-damaged").path
        var logger = try rig.sessionLogger(dataDirectory: directory)
        let start = try #require(Instant(rfc3339: "2026-03-01T08:00:00Z"))
        let good = try rig.client(logger).call(Ops.sessionLog, SessionLogRequest(
            userId: henning, activity: .workout, start: start, end: start.adding(seconds: 1800)))
        _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01"), level: .easy))
        #expect(logger.stop())

        // Damage the stopped service's projection file, where its tables are: a non-UUID id, an unknown
        // activity, a text where a number belongs, an unknown NoAlc level.
        let database = try damageable(directory + "/session-logger.projection.sqlite")
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO session (id, user_id, activity, start_ms, end_ms, source, logged_at_ms, seq) VALUES
                  ('not-a-uuid', 'henning', 'workout', ?1, ?1, NULL, ?1, 90),
                  ('3f2b8c1e-0000-4000-8000-00000000000a', 'henning', 'yoga', ?1, ?1, NULL, ?1, 91),
                  ('3f2b8c1e-0000-4000-8000-00000000000b', 'henning', 'workout', ?1, 'soon', NULL, ?1, 92);
                INSERT INTO noalc_entry (id, user_id, day, level, source, logged_at_ms, seq) VALUES
                  ('3f2b8c1e-0000-4000-8000-00000000000c', 'henning', '2026-03-02', 'tipsy', NULL, 0, 93);
                """, arguments: [start.millisecondsSince1970 + 1])
        }
        try database.close()

        logger = try rig.sessionLogger(dataDirectory: directory)
        let client = rig.client(logger)
        for _ in 0..<3 {
            let listed = try client.call(Ops.sessionList, SessionListRequest(userId: henning, from: start, until: start.adding(seconds: 86_400)))
            #expect(listed.sessions.map(\.id) == [good.id])
            let summary = try client.call(Ops.dailySummary, DailySummaryRequest(
                userId: henning, from: day("2026-03-01"), until: day("2026-03-02"), timeZone: .utc))
            #expect(summary.days.map(\.workoutMinutes) == [30, 0])
            #expect(summary.days.map(\.noalc) == [.easy, nil])
            #expect(try client.call(Ops.noalcList, DayRangeRequest(userId: henning, from: day("2026-03-01"), until: day("2026-03-02")))
                .entries.map(\.level) == [.easy])
        }
        // Once per row, however often it was read.
        #expect(try client.call(Ops.health, NoFields()).counters["unreadableRows"] == 4)
    }

    @Test func unreadableStreakRowsAreSkippedLoggedAndCounted() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        var streak = try rig.streak(following: logger)
        for offset in 0..<3 {
            _ = try rig.client(logger).call(Ops.noalcLog, NoAlcLogRequest(userId: henning, day: day("2026-03-01").adding(days: offset), level: .steady))
        }
        try waitUntil("the streak service applied three entries") {
            (try? rig.client(streak).call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))).streakDays) == 3
        }
        #expect(streak.stop())
        let database = try damageable(rig.scratch.subdirectory("noalc-streak").path + "/noalc-streak.sqlite")
        try database.write { db in
            try db.execute(sql: """
                INSERT INTO noalc_level (user_id, day, level, seq) VALUES
                  ('bad user!', '2026-03-01', 'steady', 1), ('henning', '2026-03-04', 'tipsy', 1),
                  ('henning', 'soon', 'steady', 1), ('henning', 42, 'steady', 1);
                """)
        }
        try database.close()

        streak = try rig.streak(following: logger)
        let client = rig.client(streak)
        #expect(try client.call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"))).streakDays == 3)
        #expect(try client.call(Ops.calendarGet, #require(CalendarGetRequest(userId: henning, month: "2026-03"))).days
            .compactMap(\.level).count == 3)
        #expect(try client.call(Ops.health, NoFields()).counters["unreadableRows"] == 4)
    }

    /// Kiritimati (UTC+14) and Pago Pago (UTC−11) are 25 hours apart: their todays always differ.
    @Test func streakGetTakesTodayInTheGivenZone() throws {
        let rig = try ServiceRig(.inproc)
        let logger = try rig.sessionLogger()
        let client = rig.client(try rig.streak(following: logger))
        for name in ["Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC"] {
            let zone = try #require(ZoneID(name))
            let before = Instant.now().local(in: zone).day
            let state = try client.call(Ops.streakGet, StreakGetRequest(userId: henning, timeZone: zone))
            let after = Instant.now().local(in: zone).day
            #expect(state.asOf == before || state.asOf == after, "\(name): \(state.asOf)")
        }
        // asOf wins over the zone; without either, the service's --time-zone (UTC here).
        #expect(try client.call(Ops.streakGet, StreakGetRequest(userId: henning, asOf: day("2026-03-03"), timeZone: ZoneID("Pacific/Kiritimati")))
            .asOf == day("2026-03-03"))
        let utcBefore = Instant.now().local(in: ZoneID.utc).day
        let plain = try client.call(Ops.streakGet, StreakGetRequest(userId: henning))
        #expect(plain.asOf == utcBefore || plain.asOf == Instant.now().local(in: ZoneID.utc).day)
    }

    /// A stopped service's file, opened to write damaged rows (waiting out a checkpointer's moment of lock).
    func damageable(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        return try DatabaseQueue(path: path, configuration: configuration)
    }
}
