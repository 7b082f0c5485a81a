import Foundation
import LHTSchema
import Testing
@testable import ReminderPlanning
import ZoneRules

/// Every UTC-offset transition from 2020 through 2030 in zones with DST (both hemispheres, 30- and
/// 120-minute shifts, Ramadan's negative DST, midnight transitions, zones that abolished DST).
@Suite struct DSTTransitionTests {
    static let zones = [
        // Europe / Africa, northern
        "Europe/Berlin", "Europe/London", "Europe/Lisbon", "Atlantic/Azores", "Europe/Kyiv", "Europe/Chisinau",
        "Africa/Casablanca", "Africa/Cairo", "Antarctica/Troll",
        // Middle East (Amman, Damascus, Tehran dropped DST in 2022)
        "Asia/Beirut", "Asia/Jerusalem", "Asia/Amman", "Asia/Damascus", "Asia/Tehran",
        // North America and the Caribbean (Mexico City dropped DST in 2022)
        "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles", "America/Anchorage",
        "America/Halifax", "America/St_Johns", "America/Havana", "America/Mexico_City",
        "America/Nuuk", "America/Scoresbysund",
        // Southern hemisphere (Sao Paulo abolished DST in 2019, Asuncion in 2024)
        "America/Santiago", "Pacific/Easter", "America/Asuncion", "America/Sao_Paulo",
        "Australia/Sydney", "Australia/Adelaide", "Australia/Hobart", "Australia/Lord_Howe",
        "Pacific/Auckland", "Pacific/Chatham",
    ]

    struct Transition: CustomStringConvertible {
        let utc: Int64      // first instant with the new offset
        let before: Int64   // offset just before
        let after: Int64    // offset from `utc` on
        var description: String { "\(Instant(secondsSince1970: utc)) \(before)→\(after)" }
    }

    /// Transitions that change the offset, 2020-01-01 through 2030-12-31.
    static func transitions(in zone: ZoneRules) -> [Transition] {
        zone.transitions(from: 1_577_836_800, through: 1_924_992_000).map { Transition(utc: $0.utc, before: $0.before, after: $0.after) }
    }

    @Test func zoneListIsBigEnough() {
        let withTransitions = Self.zones.filter { !Self.transitions(in: zone($0)).isEmpty }
        #expect(withTransitions.count >= 20)
    }

    @Test func rulesChangedWithinTheDecade() {
        // Brazil abolished DST in 2019; Mexico (most of it) in October 2022.
        #expect(Self.transitions(in: zone("America/Sao_Paulo")).isEmpty)
        let mexico = Self.transitions(in: zone("America/Mexico_City"))
        #expect(!mexico.isEmpty)
        #expect(mexico.allSatisfy { $0.utc < Instant(rfc3339: "2023-01-01T00:00:00Z")!.secondsSince1970 })
        // Lord Howe moves its clocks by half an hour, Troll by two.
        let lordHowe = Self.transitions(in: zone("Australia/Lord_Howe")), troll = Self.transitions(in: zone("Antarctica/Troll"))
        #expect(!lordHowe.isEmpty && lordHowe.allSatisfy { abs($0.after - $0.before) == 1800 })
        #expect(!troll.isEmpty && troll.allSatisfy { abs($0.after - $0.before) == 7200 })
    }

    /// For rule times every 15 minutes from 2 h before to 2 h after each transition's wall clock:
    /// daily occurrences over the 7 rule days around it are all there, once each, in increasing time;
    /// the transition day's instant is the RFC 5545 one; the instant-range query agrees.
    @Test(arguments: zones)
    func dailyOccurrencesAroundEveryTransition(_ identifier: String) {
        let tz = zone(identifier)
        var failures: [String] = []
        var checkedGaps = 0, checkedRepeats = 0
        for transition in Self.transitions(in: tz) {
            let transitionWall = transition.utc + transition.before
            for step in -8...8 {
                let wall = transitionWall + Int64(step) * 900
                let ruleDay = LocalDay(ordinal: Int(floorDivide(wall, 86_400)))
                let secondOfDay = floorMod(wall, 86_400)
                guard secondOfDay % 60 == 0 else { failures.append("\(identifier) \(transition): odd wall"); continue }
                let ruleTime = LocalTime(hour: Int(secondOfDay / 3600), minute: Int(secondOfDay / 60 % 60))!
                let context = "\(identifier) \(transition) rule \(ruleDay) \(ruleTime)"

                // The expected instant, from the transition alone.
                let earlier = wall - transition.before, later = wall - transition.after
                let existsBefore = earlier < transition.utc, existsAfter = later >= transition.utc
                let expected: Int64
                let expectedLocal: Int64
                if existsBefore {
                    expected = earlier                     // repeated wall times take this, the earlier one
                    expectedLocal = wall
                    if existsAfter { checkedRepeats += 1 }
                } else if existsAfter {
                    expected = later
                    expectedLocal = wall
                } else {
                    expected = earlier                     // in the gap: wall − offset before
                    expectedLocal = wall + transition.after - transition.before
                    checkedGaps += 1
                }

                let days = ruleDay.adding(days: -3)...ruleDay.adding(days: 3)
                let daily = OccurrenceCalendar.occurrences(at: ruleTime, on: everyDay, in: tz, days: days)
                guard daily.map(\.day) == (-3...3).map({ ruleDay.adding(days: $0) }) else {
                    failures.append("\(context): rule days \(daily.map(\.day))"); continue
                }
                if zip(daily, daily.dropFirst()).contains(where: { $0.at >= $1.at }) {
                    failures.append("\(context): not strictly increasing \(daily)")
                }
                if daily.contains(where: { $0.weekday != $0.day.weekday }) {
                    failures.append("\(context): weekday is not the rule day's")
                }
                let onDay = daily[3]
                if onDay.at != Instant(secondsSince1970: expected) {
                    failures.append("\(context): at \(onDay.at), expected \(Instant(secondsSince1970: expected))")
                }
                let localSecond = floorMod(expectedLocal, 86_400)
                if onDay.localTime != LocalTime(hour: Int(localSecond / 3600), minute: Int(localSecond / 60 % 60)) {
                    failures.append("\(context): local time \(onDay.localTime)")
                }
                // The real wall clock at `at` is what `localTime` says (Instant.local is independent of the planner).
                let real = onDay.at.local(in: tz)
                if real.minuteOfDay != onDay.localTime.minutesSinceMidnight || real.secondOfMinute != 0 {
                    failures.append("\(context): local(in:) says minute \(real.minuteOfDay)")
                }
                // Neighbouring days are untouched: exactly the rule time on their own day.
                for other in daily where other.day != ruleDay {
                    let local = other.at.local(in: tz)
                    if local.day != other.day || other.localTime != ruleTime || local.minuteOfDay != ruleTime.minutesSinceMidnight {
                        failures.append("\(context): neighbour \(other)")
                    }
                }
                // The instant-range query sees the same occurrences — in particular not the second
                // instance of a repeated wall time.
                let byInstant = OccurrenceCalendar.occurrences(at: ruleTime, on: everyDay, in: tz,
                                                               from: daily[0].at, through: daily[6].at)
                if byInstant != daily { failures.append("\(context): by instant \(byInstant)") }
                if existsBefore && existsAfter,
                   OccurrenceCalendar.occurrence(exactlyAt: Instant(secondsSince1970: later), time: ruleTime,
                                                 on: everyDay, in: tz) != nil {
                    failures.append("\(context): the second instance of a repeated time is an occurrence")
                }
                // `next` from just after the previous day's occurrence finds this one.
                let next = OccurrenceCalendar.next(at: ruleTime, on: everyDay, in: tz, from: daily[2].at.adding(milliseconds: 1))
                if next != onDay { failures.append("\(context): next \(String(describing: next))") }
            }
        }
        let failureCount = failures.count
        #expect(failureCount == 0, "\(failures.prefix(10).joined(separator: "\n"))")
        if !Self.transitions(in: tz).isEmpty {
            // Every zone with transitions has both kinds within ±2 h of its wall clock.
            #expect(checkedGaps > 0)
            #expect(checkedRepeats > 0)
        }
    }

    @Test func lordHoweHalfHourShift() {
        let lordHowe = zone("Australia/Lord_Howe")
        // 2026-10-04 (Sunday): 02:00 +10:30 → 02:30 +11. 02:15 does not exist → 02:45.
        let spring = OccurrenceCalendar.occurrence(on: day("2026-10-04"), at: time("02:15"), in: lordHowe)
        #expect(spring?.at == instant("2026-10-03T15:45:00Z"))
        #expect(spring?.localTime == time("02:45"))
        // 2026-04-05: 02:00 +11 → 01:30 +10:30. 01:45 happens twice; the first is at +11.
        let autumn = OccurrenceCalendar.occurrence(on: day("2026-04-05"), at: time("01:45"), in: lordHowe)
        #expect(autumn?.at == instant("2026-04-05T01:45:00+11:00"))
        #expect(autumn?.localTime == time("01:45"))
    }

    @Test func apiaSkippedDecember30th2011() {
        let apia = zone("Pacific/Apia")
        let skipped = day("2011-12-30")
        for text in ["00:00", "00:01", "09:00", "12:00", "23:59"] {
            #expect(OccurrenceCalendar.occurrence(on: skipped, at: time(text), in: apia) == nil)
        }
        // Thursday 29th was the last day at −10, Saturday 31st the first at +14.
        #expect(OccurrenceCalendar.occurrence(on: day("2011-12-29"), at: time("23:30"), in: apia)?.at
                == instant("2011-12-29T23:30:00-10:00"))
        #expect(OccurrenceCalendar.occurrence(on: day("2011-12-31"), at: time("00:00"), in: apia)?.at
                == instant("2011-12-31T00:00:00+14:00"))
        let daily = OccurrenceCalendar.occurrences(at: time("09:00"), on: everyDay, in: apia,
                                                   days: day("2011-12-28")...day("2012-01-01"))
        #expect(daily.map(\.day) == [day("2011-12-28"), day("2011-12-29"), day("2011-12-31"), day("2012-01-01")])
        #expect(daily.map(\.localTime) == Array(repeating: time("09:00"), count: 4))
        let byInstant = OccurrenceCalendar.occurrences(at: time("09:00"), on: everyDay, in: apia,
                                                       from: daily[0].at, through: daily[3].at)
        #expect(byInstant == daily)
        // A Friday-only reminder has nothing that week: the next one is Friday 2012-01-06.
        let friday = OccurrenceCalendar.next(at: time("09:00"), on: [.fri], in: apia, from: instant("2011-12-29T12:00:00-10:00"))
        #expect(friday?.day == day("2012-01-06"))
        #expect(friday?.at == instant("2012-01-06T09:00:00+14:00"))
    }

    /// America/Nuuk (standard time −02 since 2023) springs forward at 01:00Z = 23:00 local on the
    /// last Saturday of March: 23:00–24:00 does not exist, so Saturday's late rules happen on Sunday.
    @Test func gapAt2300KeepsTheRuleDayPastMidnight() {
        let nuuk = zone("America/Nuuk")
        let saturday = day("2026-03-28")
        #expect(saturday.weekday == .sat)
        let late = OccurrenceCalendar.occurrence(on: saturday, at: time("23:30"), in: nuuk)
        #expect(late == PlannedOccurrence(day: saturday, weekday: .sat, at: instant("2026-03-29T01:30:00Z"), localTime: time("00:30")))
        #expect(late?.at.local(in: nuuk).day == day("2026-03-29"))
        // SEMANTICS §1's example: a Saturday 23:59 rule happens Sunday 00:59 and is Saturday's.
        let latest = OccurrenceCalendar.occurrence(on: saturday, at: time("23:59"), in: nuuk)
        #expect(latest?.localTime == time("00:59"))
        #expect(latest?.day == saturday)
        #expect(latest?.at == instant("2026-03-29T00:59:00-01:00"))
        // A Saturday-only rule: selected by rule day, found by instant on Sunday.
        let sundayByDay = OccurrenceCalendar.occurrences(at: time("23:30"), on: [.sat], in: nuuk, days: day("2026-03-29")...day("2026-03-29"))
        #expect(sundayByDay.isEmpty)
        let sundayByInstant = OccurrenceCalendar.occurrences(at: time("23:30"), on: [.sat], in: nuuk,
                                                             from: instant("2026-03-29T00:00:00-01:00"),
                                                             through: instant("2026-03-29T23:59:59-01:00"))
        #expect(sundayByInstant == [late!])
        #expect(OccurrenceCalendar.next(at: time("23:30"), on: [.sat], in: nuuk, from: instant("2026-03-28T12:00:00-02:00")) == late)
        // The zone's first spring-forward at 23:00 is found by searching the tz data, not assumed.
        let crossing = DSTTransitionTests.transitions(in: nuuk).first { floorMod($0.utc + $0.before, 86_400) == 23 * 3600 && $0.after > $0.before }
        #expect(crossing.map { Instant(secondsSince1970: $0.utc) } == instant("2024-03-31T01:00:00Z"))
    }
}
