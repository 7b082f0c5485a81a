import Foundation
import LHTSchema
import Testing
@testable import ReminderPlanning

/// SEMANTICS.md §1–§3, numbered examples and the rules around them (Europe/Berlin).
@Suite struct SemanticsExamplesTests {
    // MARK: §1 Occurrences and time

    @Test func example1_nextOccurrencesOfAMonWedReminder() {
        let now = instant("2026-11-23T20:00:00+01:00") // Monday 20:00, after that day's 18:00
        let rule = (time: time("18:00"), weekdays: Set<Weekday>([.mon, .wed]))
        let next = OccurrenceCalendar.next(at: rule.time, on: rule.weekdays, in: berlin, from: now)
        #expect(next == PlannedOccurrence(day: day("2026-11-25"), weekday: .wed,
                                          at: instant("2026-11-25T17:00:00Z"), localTime: time("18:00")))
        let week = OccurrenceCalendar.occurrences(at: rule.time, on: rule.weekdays, in: berlin,
                                                  from: now, through: now.adding(seconds: 7 * 86_400))
        #expect(week.map(\.at) == [instant("2026-11-25T18:00:00+01:00"), instant("2026-11-30T18:00:00+01:00")])
        #expect(week.map(\.weekday) == [.wed, .mon])
        #expect(week.map(\.day) == [day("2026-11-25"), day("2026-11-30")])
    }

    @Test func example1_dailyReminderIsTomorrowNotNextWeek() {
        // The seed `004_…` bug: re-scheduling after the day's trigger pushed it to next Monday.
        let now = instant("2026-11-23T20:00:00+01:00")
        let next = OccurrenceCalendar.next(at: time("09:45"), on: everyDay, in: berlin, from: now)
        #expect(next?.day == day("2026-11-24"))
        #expect(next?.weekday == .tue)
        #expect(next?.at == instant("2026-11-24T09:45:00+01:00"))
        #expect(next?.localTime == time("09:45"))
    }

    @Test func example2_springForwardGapShiftsByTheGap() {
        let occurrence = OccurrenceCalendar.occurrence(on: day("2026-03-29"), at: time("02:30"), in: berlin)
        #expect(occurrence == PlannedOccurrence(day: day("2026-03-29"), weekday: .sun,
                                                at: instant("2026-03-29T01:30:00Z"), localTime: time("03:30")))
    }

    @Test func example2_fallBackFiresOnceAtTheFirst0230() {
        let occurrence = OccurrenceCalendar.occurrence(on: day("2026-10-25"), at: time("02:30"), in: berlin)
        #expect(occurrence?.at == instant("2026-10-25T00:30:00Z"))
        #expect(occurrence?.localTime == time("02:30"))
        // Over the whole weekend, 2026-10-25 has exactly one occurrence; 01:30Z (the second 02:30) is none.
        let weekend = OccurrenceCalendar.occurrences(at: time("02:30"), on: everyDay, in: berlin,
                                                     from: instant("2026-10-24T00:00:00Z"),
                                                     through: instant("2026-10-26T12:00:00Z"))
        #expect(weekend.map(\.at) == [instant("2026-10-24T00:30:00Z"), instant("2026-10-25T00:30:00Z"),
                                      instant("2026-10-26T01:30:00Z")])
        #expect(weekend.map(\.day) == [day("2026-10-24"), day("2026-10-25"), day("2026-10-26")])
        #expect(OccurrenceCalendar.occurrence(exactlyAt: instant("2026-10-25T01:30:00Z"), time: time("02:30"),
                                              on: everyDay, in: berlin) == nil)
    }

    @Test func occurrencesExistFromTheCreationInstantInclusive() {
        let created = instant("2026-11-23T18:00:00+01:00") // exactly the Monday occurrence
        let next = OccurrenceCalendar.next(at: time("18:00"), on: [.mon, .wed], in: berlin, from: created)
        #expect(next?.at == created)
        let later = OccurrenceCalendar.next(at: time("18:00"), on: [.mon, .wed], in: berlin,
                                            from: created.adding(milliseconds: 1))
        #expect(later?.day == day("2026-11-25"))
    }

    // MARK: §2 Coverage

    @Test func lookbackWindowIsRealElapsedTimeAcrossDST() {
        // Sunday 2026-03-29 10:00 CEST (08:00Z), L = 12: the window opens 12 real hours earlier,
        // 20:00Z = 21:00 CET on Saturday — not 22:00 "same wall clock minus 12".
        let at = instant("2026-03-29T10:00:00+02:00")
        #expect(Coverage.windowStart(of: at, lookbackHours: 12) == instant("2026-03-28T21:00:00+01:00"))
        #expect(Coverage.windowStart(of: at, lookbackHours: 48) == instant("2026-03-27T08:00:00Z"))
    }

    @Test func example3_morningMeditationCancelsThatEveningOnly() {
        let monday = OccurrenceCalendar.occurrence(on: day("2026-11-23"), at: time("18:00"), in: berlin)!
        let tuesday = OccurrenceCalendar.occurrence(on: day("2026-11-24"), at: time("18:00"), in: berlin)!
        let start = instant("2026-11-23T10:00:00+01:00"), end = instant("2026-11-23T10:15:00+01:00")
        #expect(Coverage.windowStart(of: monday.at, lookbackHours: 12) == instant("2026-11-23T06:00:00+01:00"))
        #expect(Coverage.sessionCovers(start: start, end: end, occurrenceAt: monday.at, lookbackHours: 12))
        #expect(!Coverage.sessionCovers(start: start, end: end, occurrenceAt: tuesday.at, lookbackHours: 12))
        #expect(Decision.decide(paused: false, coveringCause: "session-1", restored: false) == .suppressed(cause: "session-1"))
        #expect(Decision.decide(paused: false, coveringCause: nil, restored: false) == .due)
    }

    @Test func example4_workoutWindowsDependOnLookback() {
        let start = instant("2026-11-23T10:00:00+01:00"), end = instant("2026-11-23T10:30:00+01:00")
        let noon = instant("2026-11-23T12:00:00+01:00"), evening = instant("2026-11-23T18:00:00+01:00")
        #expect(Coverage.windowStart(of: noon, lookbackHours: 1) == instant("2026-11-23T11:00:00+01:00"))
        #expect(!Coverage.sessionCovers(start: start, end: end, occurrenceAt: noon, lookbackHours: 1))
        #expect(Coverage.sessionCovers(start: start, end: end, occurrenceAt: evening, lookbackHours: 12))
        // The window's edge is inclusive: a session ending exactly at T − L still overlaps it.
        #expect(Coverage.sessionCovers(start: start, end: instant("2026-11-23T11:00:00+01:00"), occurrenceAt: noon, lookbackHours: 1))
        #expect(!Coverage.sessionCovers(start: start, end: instant("2026-11-23T10:59:59.999+01:00"), occurrenceAt: noon, lookbackHours: 1))
    }

    @Test func example5_activityAfterTNeverCovers() {
        let evening = instant("2026-11-23T18:00:00+01:00")
        let late = instant("2026-11-23T18:30:00+01:00")
        #expect(!Coverage.sessionCovers(start: late, end: late.adding(seconds: 900), occurrenceAt: evening, lookbackHours: 12))
        #expect(!Coverage.sessionCovers(start: evening.adding(milliseconds: 1), end: late, occurrenceAt: evening, lookbackHours: 12))
        #expect(Coverage.sessionCovers(start: evening, end: late, occurrenceAt: evening, lookbackHours: 12))
        // A point session is seed `000_…`'s inclusive check T − L <= completedAt <= T (SEMANTICS §2).
        #expect(Coverage.sessionCovers(start: evening, end: evening, occurrenceAt: evening, lookbackHours: 12))
        let windowStart = Coverage.windowStart(of: evening, lookbackHours: 12)
        #expect(Coverage.sessionCovers(start: windowStart, end: windowStart, occurrenceAt: evening, lookbackHours: 12))
        let before = windowStart.adding(milliseconds: -1)
        #expect(!Coverage.sessionCovers(start: before, end: before, occurrenceAt: evening, lookbackHours: 12))
        // A session spanning the whole window (started before it, ended after T) overlaps it.
        #expect(Coverage.sessionCovers(start: instant("2026-11-23T05:00:00+01:00"), end: late, occurrenceAt: evening, lookbackHours: 12))
    }

    @Test func example6_mondayActivityCancelsMondayOnly() {
        let week = OccurrenceCalendar.occurrences(at: time("18:00"), on: [.mon, .wed], in: berlin,
                                                  days: day("2026-11-23")...day("2026-11-29"))
        #expect(week.map(\.weekday) == [.mon, .wed])
        let start = instant("2026-11-23T10:00:00+01:00"), end = instant("2026-11-23T10:20:00+01:00")
        let covered = week.filter { Coverage.sessionCovers(start: start, end: end, occurrenceAt: $0.at, lookbackHours: 12) }
        #expect(covered.map(\.day) == [day("2026-11-23")])
    }

    @Test func example7_noalcMorningAsksAboutYesterday() {
        let today = day("2026-11-24"), yesterday = day("2026-11-23")
        #expect(Coverage.noalcTargetDay(ruleDay: today, ruleTime: time("09:00")) == yesterday)
        // Yesterday's level covers it whenever it was logged (22:00 the evening before or 08:30 this
        // morning): only the entry's day is compared. Today's level does not.
        #expect(Coverage.noalcEntryCovers(entryDay: yesterday, ruleDay: today, ruleTime: time("09:00")))
        #expect(!Coverage.noalcEntryCovers(entryDay: today, ruleDay: today, ruleTime: time("09:00")))
        // The shipped app's trap (SEMANTICS §2): yesterday at 09:05 logging about the day before must
        // not cancel today's 09:00 check-in (which asks about yesterday).
        #expect(!Coverage.noalcEntryCovers(entryDay: day("2026-11-22"), ruleDay: today, ruleTime: time("09:00")))
    }

    @Test func example7_noalcEveningBoundaryIs1800Inclusive() {
        let today = day("2026-11-24")
        #expect(Coverage.noalcTargetDay(ruleDay: today, ruleTime: time("17:59")) == day("2026-11-23"))
        #expect(Coverage.noalcTargetDay(ruleDay: today, ruleTime: time("18:00")) == today)
        #expect(Coverage.noalcTargetDay(ruleDay: today, ruleTime: time("20:00")) == today)
        #expect(Coverage.noalcTargetDay(ruleDay: today, ruleTime: time("00:00")) == day("2026-11-23"))
        #expect(Coverage.noalcTargetDay(ruleDay: day("2026-03-01"), ruleTime: time("09:00")) == day("2026-02-28"))
    }

    @Test func example8_reminderCreatedAfterTheActivityIsCoveredAllTheSame() {
        let sessionStart = instant("2026-11-23T10:00:00+01:00"), sessionEnd = instant("2026-11-23T10:15:00+01:00")
        let created = instant("2026-11-23T12:00:00+01:00")
        let first = OccurrenceCalendar.next(at: time("18:00"), on: everyDay, in: berlin, from: created)!
        #expect(first.at == instant("2026-11-23T18:00:00+01:00"))
        #expect(Coverage.sessionCovers(start: sessionStart, end: sessionEnd, occurrenceAt: first.at, lookbackHours: 12))
    }

    // MARK: §3 Deciding

    @Test func pauseWinsOverEverything() {
        #expect(Decision.decide(paused: true, coveringCause: nil, restored: false) == .skipped)
        #expect(Decision.decide(paused: true, coveringCause: "session-1", restored: false) == .skipped)
        #expect(Decision.decide(paused: true, coveringCause: "session-1", restored: true) == .skipped)
    }

    @Test func restoredOccurrenceFiresDespiteCoverage() {
        #expect(Decision.decide(paused: false, coveringCause: "entry-7", restored: true) == .due)
        #expect(Decision.decide(paused: false, coveringCause: nil, restored: true) == .due)
        #expect(Decision.decide(paused: false, coveringCause: "entry-7", restored: false) == .suppressed(cause: "entry-7"))
    }

    @Test func timelinessBoundaries() {
        let at = instant("2026-11-23T18:00:00+01:00")
        func classify(_ delay: Int64) -> Timeliness { Timeliness.classify(now: at.adding(milliseconds: delay), at: at, graceMinutes: 60) }
        #expect(classify(0) == .onTime)
        #expect(classify(-5_000) == .onTime) // woken early: still its own time
        #expect(classify(999) == .onTime)    // timer slack
        #expect(classify(1_000) == .late)
        #expect(classify(30 * 60_000) == .late)
        #expect(classify(60 * 60_000) == .late)          // exactly the grace window: still decided, late
        #expect(classify(60 * 60_000 + 1) == .missed)
        #expect(classify(60 * 60_000 + 1_000) == .missed) // one second beyond: missed
        #expect(Timeliness.classify(now: at.adding(seconds: 5), at: at, graceMinutes: 0) == .missed)
        #expect(Timeliness.classify(now: at.adding(seconds: 5), at: at, graceMinutes: 60, onTimeToleranceMilliseconds: 10_000) == .onTime)
    }
}
