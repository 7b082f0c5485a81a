import Foundation
import LHTSchema
import Testing
@testable import ReminderPlanning

/// `ZoneOffsets` (the zone's transitions, remembered) gives exactly what asking Foundation's
/// `TimeZone` each time gives — the path `DSTTransitionTests` checks against the transitions.
@Suite struct ZoneOffsetsTests {
    /// The DST zones, plus a 45-minute zone, the date line (Apia), and transitions at 23:00 and 24:00
    /// local (Nuuk; Cairo and Santiago change at midnight, Havana and Beirut at 00:00).
    static let zones = DSTTransitionTests.zones + ["Asia/Kathmandu", "Pacific/Apia", "Asia/Kolkata", "UTC"]

    @Test(arguments: zones)
    func offsetsAroundEveryTransitionAgree(_ identifier: String) {
        let tz = zone(identifier), cached = ZoneOffsets(tz)
        var mismatches: [String] = []
        for transition in DSTTransitionTests.transitions(in: tz) {
            for delta: Int64 in [-86_400, -3601, -3600, -1801, -1800, -1, 0, 1, 1799, 1800, 3599, 3600, 86_400] {
                let utc = transition.utc + delta
                if cached.offset(at: utc) != tz.offset(at: utc) { mismatches.append("\(transition) \(delta)") }
            }
        }
        // Every hour of a year, in a fresh cache (blocks built in another order).
        let year = ZoneOffsets(tz)
        for hour in stride(from: Int64(1_767_225_600), to: 1_798_761_600, by: 3600) where year.offset(at: hour) != tz.offset(at: hour) {
            mismatches.append("hour \(Instant(secondsSince1970: hour))")
        }
        #expect(mismatches.isEmpty, "\(identifier): \(mismatches.prefix(10))")
    }

    /// Daily occurrences at rule times every 15 minutes from 3 h before to 3 h after each
    /// transition's wall clock, by day, by instant and with `next`: the same through both.
    @Test(arguments: zones)
    func occurrencesAcrossDSTNightsAgree(_ identifier: String) {
        let tz = zone(identifier), cached = ZoneOffsets(tz)
        var mismatches: [String] = []
        for transition in DSTTransitionTests.transitions(in: tz) {
            let transitionWall = transition.utc + transition.before
            for step in -12...12 {
                let wall = transitionWall + Int64(step) * 900
                let ruleDay = LocalDay(ordinal: Int(floorDiv(wall, 86_400)))
                let second = floorMod(wall, 86_400)
                let ruleTime = LocalTime(hour: Int(second / 3600), minute: Int(second / 60 % 60))!
                let days = ruleDay.adding(days: -3)...ruleDay.adding(days: 3)
                let reference = OccurrenceCalendar.occurrences(at: ruleTime, on: everyDay, in: tz, days: days)
                if OccurrenceCalendar.occurrences(at: ruleTime, on: everyDay, in: cached, days: days) != reference {
                    mismatches.append("\(transition) \(ruleTime) by day")
                }
                guard let first = reference.first, let last = reference.last else { continue }
                if OccurrenceCalendar.occurrences(at: ruleTime, on: [.mon, .wed, .sat, .sun], in: cached, from: first.at, through: last.at)
                    != OccurrenceCalendar.occurrences(at: ruleTime, on: [.mon, .wed, .sat, .sun], in: tz, from: first.at, through: last.at) {
                    mismatches.append("\(transition) \(ruleTime) by instant")
                }
                for from in [first.at, Instant(secondsSince1970: transition.utc - 3600), Instant(secondsSince1970: transition.utc)] {
                    if OccurrenceCalendar.next(at: ruleTime, on: everyDay, in: cached, from: from)
                        != OccurrenceCalendar.next(at: ruleTime, on: everyDay, in: tz, from: from) {
                        mismatches.append("\(transition) \(ruleTime) next from \(from)")
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(identifier): \(mismatches.prefix(10))")
    }

    @Test func apiaSkippedDayStaysSkipped() {
        let apia = ZoneOffsets(zone("Pacific/Apia"))
        #expect(OccurrenceCalendar.occurrence(on: day("2011-12-30"), at: time("09:00"), in: apia) == nil)
        #expect(OccurrenceCalendar.occurrence(on: day("2011-12-31"), at: time("00:00"), in: apia)?.at == instant("2011-12-31T00:00:00+14:00"))
    }
}
