import Foundation
import LHTSchema
import Testing
@testable import ReminderPlanning

/// `Coverage.cause`: the one place that decides what covers an occurrence (SEMANTICS §2) and which
/// candidate is named when several do (Europe/Berlin; Monday 2026-11-23).
@Suite struct CoverageCauseTests {
    static let henning = UserID("henning")!
    static let other = UserID("other")!

    static func reminder(_ activity: Activity, at ruleTime: String, lookbackHours: Int = 12, user: UserID = henning) -> Reminder {
        Reminder(id: RecordID(), userId: user, activity: activity, time: time(ruleTime), weekdays: Weekday.allCases,
                 lookbackHours: lookbackHours, enabled: true, title: nil, body: nil, createdAt: instant("2026-11-01T00:00:00Z"))
    }

    static func occurrence(_ ruleDay: String, _ ruleTime: String) -> PlannedOccurrence {
        OccurrenceCalendar.occurrence(on: day(ruleDay), at: time(ruleTime), in: berlin)!
    }

    static func session(_ start: Instant, _ end: Instant, logged: Int64 = 1, activity: Activity = .mindfulness,
                        user: UserID = henning) -> CoverageCandidate {
        .session(id: RecordID(), userId: user, activity: activity, start: start, end: end, loggedOrder: logged)
    }

    static func entry(_ entryDay: String, logged: Int64 = 1, user: UserID = henning) -> CoverageCandidate {
        .noalcEntry(id: RecordID(), userId: user, day: day(entryDay), loggedOrder: logged)
    }

    // MARK: Sessions: overlap of [start, end] with [T − L, T]

    let mindfulness = CoverageCauseTests.reminder(.mindfulness, at: "18:00")
    let monday = CoverageCauseTests.occurrence("2026-11-23", "18:00")
    var t: Instant { monday.at }
    var windowStart: Instant { Coverage.windowStart(of: t, lookbackHours: 12) }

    @Test func nothingLoggedCoversNothing() {
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: []) == nil)
    }

    @Test func sessionStartingExactlyAtTCovers() {
        let atT = Self.session(t, t.adding(seconds: 900))
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [atT]) == atT.id)
        let justAfter = Self.session(t.adding(milliseconds: 1), t.adding(seconds: 900))
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [justAfter]) == nil)
    }

    @Test func sessionEndingExactlyAtWindowStartCovers() {
        let start = windowStart.adding(seconds: -1800)
        let atEdge = Self.session(start, windowStart)
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [atEdge]) == atEdge.id)
        let justBefore = Self.session(start, windowStart.adding(milliseconds: -1))
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [justBefore]) == nil)
    }

    @Test func pointSessionsAreSeed000sInclusiveCheck() {
        // Seed `000_…`'s T − L <= completedAt <= T, both ends inclusive (SEMANTICS §2).
        for covering in [t, windowStart, instant("2026-11-23T10:00:00+01:00")] {
            let point = Self.session(covering, covering)
            #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [point]) == point.id)
        }
        for outside in [t.adding(milliseconds: 1), windowStart.adding(milliseconds: -1)] {
            #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [Self.session(outside, outside)]) == nil)
        }
    }

    @Test func sessionSpanningTheWholeWindowCovers() {
        let long = Self.session(windowStart.adding(seconds: -3600), t.adding(seconds: 3600))
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [long]) == long.id)
    }

    @Test func windowIsRealElapsedHoursAcrossDST() {
        // Sunday 2026-03-29 10:00 CEST, L = 12: the window opens at 21:00 CET on Saturday, not 22:00.
        let sunday = Self.occurrence("2026-03-29", "10:00")
        let at2100 = Self.session(instant("2026-03-28T20:30:00+01:00"), instant("2026-03-28T21:00:00+01:00"))
        let at2059 = Self.session(instant("2026-03-28T20:30:00+01:00"), instant("2026-03-28T20:59:59+01:00"))
        #expect(Coverage.cause(of: sunday, of: mindfulness, candidates: [at2100]) == at2100.id)
        #expect(Coverage.cause(of: sunday, of: mindfulness, candidates: [at2059]) == nil)
    }

    @Test func onlyTheSameUserAndActivityCover() {
        let start = instant("2026-11-23T10:00:00+01:00"), end = instant("2026-11-23T10:15:00+01:00")
        let workout = Self.session(start, end, activity: .workout)
        let someoneElse = Self.session(start, end, user: Self.other)
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [workout, someoneElse]) == nil)
        // A NoAlc entry about the day never covers a session reminder.
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [Self.entry("2026-11-23")]) == nil)
    }

    @Test func severalCoveringSessionsNameTheFirstLogged() {
        let morning = Self.session(instant("2026-11-23T10:00:00+01:00"), instant("2026-11-23T10:15:00+01:00"), logged: 7)
        let noon = Self.session(instant("2026-11-23T12:00:00+01:00"), instant("2026-11-23T12:15:00+01:00"), logged: 3)
        let evening = Self.session(instant("2026-11-23T17:00:00+01:00"), instant("2026-11-23T17:15:00+01:00"), logged: 5)
        // Logged first, not started first, and whatever order the candidates come in.
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [morning, noon, evening]) == noon.id)
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [evening, morning, noon]) == noon.id)
        // A candidate logged earlier that does not cover is passed over (it starts after T).
        let late = Self.session(instant("2026-11-23T18:30:00+01:00"), instant("2026-11-23T18:45:00+01:00"), logged: 1)
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [late, morning, evening]) == evening.id)
        // Equal orders (never from the session log, whose seq is unique): the first passed stays.
        let twin = Self.session(instant("2026-11-23T11:00:00+01:00"), instant("2026-11-23T11:15:00+01:00"), logged: 3)
        #expect(Coverage.cause(of: monday, of: mindfulness, candidates: [twin, noon]) == twin.id)
    }

    @Test func example4_eachReminderItsOwnWindow() {
        let workout = Self.session(instant("2026-11-23T10:00:00+01:00"), instant("2026-11-23T10:30:00+01:00"), activity: .workout)
        let noonL1 = Self.reminder(.workout, at: "12:00", lookbackHours: 1)
        let eveningL12 = Self.reminder(.workout, at: "18:00", lookbackHours: 12)
        #expect(Coverage.cause(of: Self.occurrence("2026-11-23", "12:00"), of: noonL1, candidates: [workout]) == nil)
        #expect(Coverage.cause(of: monday, of: eveningL12, candidates: [workout]) == workout.id)
        // Tuesday's 18:00 stays scheduled.
        #expect(Coverage.cause(of: Self.occurrence("2026-11-24", "18:00"), of: eveningL12, candidates: [workout]) == nil)
    }

    // MARK: NoAlc: an entry about the target day

    @Test func noalcMorningRuleIsCoveredByYesterdaysEntry() {
        let checkIn = Self.reminder(.noalc, at: "09:00", lookbackHours: 24)
        let tuesday = Self.occurrence("2026-11-24", "09:00")
        let yesterday = Self.entry("2026-11-23"), today = Self.entry("2026-11-24"), dayBefore = Self.entry("2026-11-22")
        #expect(Coverage.cause(of: tuesday, of: checkIn, candidates: [dayBefore, yesterday, today]) == yesterday.id)
        // Today's level does not; nor does the day before's (the shipped app's trap, SEMANTICS §2).
        #expect(Coverage.cause(of: tuesday, of: checkIn, candidates: [today, dayBefore]) == nil)
    }

    @Test func noalcEveningBoundaryIs1800Inclusive() {
        let monday = day("2026-11-23")
        let today = Self.entry("2026-11-24"), yesterday = Self.entry("2026-11-23")
        for (ruleTime, covering) in [("18:00", today), ("23:59", today), ("17:59", yesterday), ("00:00", yesterday)] {
            let rule = Self.reminder(.noalc, at: ruleTime, lookbackHours: 24)
            let tuesday = Self.occurrence("2026-11-24", ruleTime)
            #expect(Coverage.cause(of: tuesday, of: rule, candidates: [today, yesterday]) == covering.id, "rule \(ruleTime)")
            #expect(Coverage.noalcTargetDay(ruleDay: day("2026-11-24"), ruleTime: time(ruleTime)) == (covering == today ? day("2026-11-24") : monday))
        }
    }

    @Test func noalcIsCoveredOnlyByEntriesOfTheSameUser() {
        let checkIn = Self.reminder(.noalc, at: "09:00", lookbackHours: 24)
        let tuesday = Self.occurrence("2026-11-24", "09:00")
        #expect(Coverage.cause(of: tuesday, of: checkIn, candidates: [Self.entry("2026-11-23", user: Self.other)]) == nil)
        // A session never covers a NoAlc check-in, however it overlaps.
        let session = Self.session(instant("2026-11-24T08:00:00+01:00"), instant("2026-11-24T08:30:00+01:00"))
        #expect(Coverage.cause(of: tuesday, of: checkIn, candidates: [session]) == nil)
    }

    @Test func noalcSeveralEntriesForTheTargetDayNameTheFirst() {
        // The planner stores only a day's first entry; given more, the rule still names the first logged.
        let checkIn = Self.reminder(.noalc, at: "09:00", lookbackHours: 24)
        let tuesday = Self.occurrence("2026-11-24", "09:00")
        let first = Self.entry("2026-11-23", logged: 2), second = Self.entry("2026-11-23", logged: 9)
        #expect(Coverage.cause(of: tuesday, of: checkIn, candidates: [second, first]) == first.id)
    }
}
