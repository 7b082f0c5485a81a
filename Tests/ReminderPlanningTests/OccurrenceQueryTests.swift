import Foundation
import LHTSchema
import Testing
@testable import ReminderPlanning

/// The three queries agree with each other, select by weekday and rule day, and behave at their edges.
@Suite struct OccurrenceQueryTests {
    @Test func emptyWeekdaysHaveNoOccurrences() {
        let now = instant("2026-11-23T12:00:00Z")
        #expect(OccurrenceCalendar.next(at: time("09:00"), on: [], in: berlin, from: now) == nil)
        #expect(OccurrenceCalendar.occurrences(at: time("09:00"), on: [], in: berlin, from: now, through: now.adding(seconds: 30 * 86_400)).isEmpty)
        #expect(OccurrenceCalendar.occurrences(at: time("09:00"), on: [], in: berlin, days: day("2026-11-01")...day("2026-11-30")).isEmpty)
    }

    @Test func weekdaysSelectRuleDays() {
        let november = OccurrenceCalendar.occurrences(at: time("07:00"), on: [.mon, .wed, .sun], in: berlin,
                                                      days: day("2026-11-01")...day("2026-11-30"))
        // November 2026 starts on a Sunday: 5 Sundays, 5 Mondays, 4 Wednesdays.
        #expect(november.count == 14)
        #expect(november.first?.day == day("2026-11-01"))
        #expect(november.first?.weekday == .sun)
        #expect(november.allSatisfy { [.mon, .wed, .sun].contains($0.weekday) && $0.weekday == $0.day.weekday })
        #expect(november.allSatisfy { $0.localTime == time("07:00") && $0.at.local(in: berlin).day == $0.day })
        #expect(zip(november, november.dropFirst()).allSatisfy { $0.at < $1.at })
        let single = OccurrenceCalendar.occurrences(at: time("07:00"), on: [.sat], in: berlin, days: day("2026-11-07")...day("2026-11-07"))
        #expect(single.map(\.at) == [instant("2026-11-07T06:00:00Z")])
    }

    @Test func instantRangeIsInclusiveAtBothEnds() {
        let t = instant("2026-11-24T08:45:00Z") // 09:45 Berlin
        let exact = OccurrenceCalendar.occurrences(at: time("09:45"), on: everyDay, in: berlin, from: t, through: t)
        #expect(exact.map(\.at) == [t])
        #expect(OccurrenceCalendar.occurrences(at: time("09:45"), on: everyDay, in: berlin,
                                               from: t.adding(milliseconds: 1), through: t.adding(seconds: 3600)).isEmpty)
        #expect(OccurrenceCalendar.occurrences(at: time("09:45"), on: everyDay, in: berlin,
                                               from: t.adding(seconds: -3600), through: t.adding(milliseconds: -1)).isEmpty)
        #expect(OccurrenceCalendar.occurrences(at: time("09:45"), on: everyDay, in: berlin,
                                               from: t.adding(seconds: 60), through: t).isEmpty)
        #expect(OccurrenceCalendar.occurrence(exactlyAt: t, time: time("09:45"), on: everyDay, in: berlin)?.day == day("2026-11-24"))
        #expect(OccurrenceCalendar.occurrence(exactlyAt: t, time: time("09:45"), on: [.mon], in: berlin) == nil)
        #expect(OccurrenceCalendar.occurrence(exactlyAt: t.adding(seconds: 1), time: time("09:45"), on: everyDay, in: berlin) == nil)
    }

    /// `next`, the instant range and the day range agree, in zones from UTC−12 to UTC+14 (the day
    /// candidates are found by arithmetic with an offset bound, so the extremes matter).
    @Test(arguments: ["UTC", "Etc/GMT+12", "Pacific/Kiritimati", "Asia/Kolkata", "Asia/Kathmandu",
                      "Europe/Berlin", "America/Santiago", "Australia/Lord_Howe", "America/Nuuk"])
    func queriesAgree(_ identifier: String) {
        let tz = zone(identifier)
        var failures: [String] = []
        let rules: [(LocalTime, Set<Weekday>)] = [
            (time("00:00"), everyDay), (time("02:30"), everyDay), (time("23:59"), [.sat]),
            (time("12:00"), [.mon, .wed]), (time("18:45"), [.fri, .sun]),
        ]
        // Mid-2026 through spring 2027 crosses both transitions in either hemisphere.
        let start = instant("2026-09-01T00:00:00Z")
        for (ruleTime, weekdays) in rules {
            let span = LocalDay(ordinal: day("2026-08-30").ordinal)...day("2027-04-15")
            let all = OccurrenceCalendar.occurrences(at: ruleTime, on: weekdays, in: tz, days: span)
            for step in 0..<300 {
                let from = start.adding(seconds: Int64(step) * 17_777 + 123) // irregular, not minute-aligned
                let through = from.adding(seconds: 3 * 86_400 + Int64(step % 5) * 3_600)
                let expected = all.filter { $0.at >= from && $0.at <= through }
                let got = OccurrenceCalendar.occurrences(at: ruleTime, on: weekdays, in: tz, from: from, through: through)
                if got != expected { failures.append("\(identifier) \(ruleTime) \(from)…\(through): \(got) vs \(expected)") }
                let next = OccurrenceCalendar.next(at: ruleTime, on: weekdays, in: tz, from: from)
                if next != all.first(where: { $0.at >= from }) { failures.append("\(identifier) \(ruleTime) next from \(from): \(String(describing: next))") }
            }
        }
        let failureCount = failures.count
        #expect(failureCount == 0, "\(failures.prefix(10).joined(separator: "\n"))")
    }

    @Test func extremeOffsetsKeepTheRuleDay() {
        // Kiritimati is UTC+14: Monday 00:30 there is Sunday 10:30Z.
        let kiritimati = zone("Pacific/Kiritimati")
        let early = OccurrenceCalendar.occurrence(on: day("2026-11-23"), at: time("00:30"), in: kiritimati)
        #expect(early?.at == instant("2026-11-22T10:30:00Z"))
        #expect(early?.weekday == .mon)
        // Etc/GMT+12 is UTC−12: Monday 23:30 there is Tuesday 11:30Z.
        let late = OccurrenceCalendar.occurrence(on: day("2026-11-23"), at: time("23:30"), in: zone("Etc/GMT+12"))
        #expect(late?.at == instant("2026-11-24T11:30:00Z"))
        let fromSundayUTC = OccurrenceCalendar.next(at: time("00:30"), on: [.mon], in: kiritimati, from: instant("2026-11-22T00:00:00Z"))
        #expect(fromSundayUTC == early)
    }

    @Test func longRangesStayCheap() {
        // A year of daily occurrences (the planner's start-up work per reminder is far less).
        let year = OccurrenceCalendar.occurrences(at: time("08:15"), on: everyDay, in: berlin, days: day("2026-01-01")...day("2026-12-31"))
        #expect(year.count == 365)
        #expect(Set(year.map(\.at)).count == 365)
        #expect(year.allSatisfy { $0.localTime == time("08:15") })
    }
}
