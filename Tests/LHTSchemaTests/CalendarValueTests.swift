import Foundation
import Testing
import TestSupport
@testable import LHTSchema
import ZoneRules

// PROTOCOL.md "Value formats": local day, local time, weekday, instant, time zone, userId, ids.

@Suite("LocalDay")
struct LocalDayTests {
    /// Every day from 1900-01-01 to 2100-12-31 against Foundation's Gregorian calendar: components,
    /// printing, parsing, ordinal arithmetic and weekday.
    @Test func everyDayFrom1900To2100MatchesFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(secondsFromGMT: 0))
        let first = try #require(LocalDay(year: 1900, month: 1, day: 1))
        let last = try #require(LocalDay(year: 2100, month: 12, day: 31))
        #expect(first.ordinal == -25_567)
        #expect(last.days(since: first) + 1 == 73_414)
        // Foundation numbers weekdays from Sunday = 1.
        let foundationWeekdays: [Weekday] = [.sun, .mon, .tue, .wed, .thu, .fri, .sat]

        var checked = 0
        var mismatches: [String] = []
        var previous: LocalDay?
        for ordinal in first.ordinal...last.ordinal {
            // Noon, so that no representation question at midnight can matter.
            let date = Date(timeIntervalSince1970: Double(ordinal) * 86_400 + 43_200)
            let expected = calendar.dateComponents([.year, .month, .day, .weekday], from: date)
            guard let year = expected.year, let month = expected.month, let dayOfMonth = expected.day,
                  let weekday = expected.weekday else {
                mismatches.append("Foundation gave no components for ordinal \(ordinal)")
                continue
            }
            let day = LocalDay(ordinal: ordinal)
            let text = String(year).leftPadded(to: 4) + "-" + String(month).leftPadded(to: 2) + "-"
                + String(dayOfMonth).leftPadded(to: 2)
            let components = day.components
            if components.year != year || components.month != month || components.day != dayOfMonth {
                mismatches.append("\(ordinal): components \(components) vs Foundation \(text)")
            }
            if LocalDay(year: year, month: month, day: dayOfMonth)?.ordinal != ordinal {
                mismatches.append("\(text): init(year:month:day:) gave \(String(describing: LocalDay(year: year, month: month, day: dayOfMonth)?.ordinal)), expected \(ordinal)")
            }
            if day.description != text { mismatches.append("\(ordinal): printed \(day) vs \(text)") }
            if LocalDay(text) != day { mismatches.append("\(text): parsed as \(String(describing: LocalDay(text)))") }
            if day.weekday != foundationWeekdays[weekday - 1] {
                mismatches.append("\(text): weekday \(day.weekday) vs Foundation \(foundationWeekdays[weekday - 1])")
            }
            if day.days(since: first) != ordinal - first.ordinal || first.adding(days: ordinal - first.ordinal) != day {
                mismatches.append("\(text): arithmetic from 1900-01-01")
            }
            if let previous {
                if !(previous < day) || previous.adding(days: 1) != day || day.adding(days: -1) != previous {
                    mismatches.append("\(text): not one day after \(previous)")
                }
            }
            previous = day
            checked += 1
            if mismatches.count > 20 { break }
        }
        #expect(checked == 73_414)
        #expect(mismatches.isEmpty, "\(mismatches.prefix(20).joined(separator: "\n"))")
    }

    /// Day differences across months, years and leap days agree with Foundation.
    @Test func dayDifferencesAgreeWithFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(secondsFromGMT: 0))
        var random = SplitMix64(seed: 0xDA75)
        let first = try #require(LocalDay(year: 1900, month: 1, day: 1)).ordinal
        for _ in 0..<500 {
            let a = LocalDay(ordinal: first + random.below(73_414))
            let b = LocalDay(ordinal: first + random.below(73_414))
            let dateA = try #require(calendar.date(from: DateComponents(year: a.components.year, month: a.components.month, day: a.components.day)))
            let dateB = try #require(calendar.date(from: DateComponents(year: b.components.year, month: b.components.month, day: b.components.day)))
            let expected = calendar.dateComponents([.day], from: dateA, to: dateB).day
            #expect(b.days(since: a) == expected, "\(a) → \(b)")
        }
    }

    @Test func knownDays() throws {
        #expect(LocalDay("1970-01-01")?.ordinal == 0)
        #expect(LocalDay("1970-01-01")?.weekday == .thu)
        #expect(LocalDay("1969-12-31")?.ordinal == -1)
        #expect(LocalDay("1969-12-31")?.weekday == .wed)
        #expect(LocalDay("2026-11-23")?.weekday == .mon)
        #expect(LocalDay("2000-02-29") != nil)
        #expect(LocalDay("2024-02-29") != nil)
        #expect(LocalDay("0001-01-01")?.description == "0001-01-01")
        #expect(LocalDay("9999-12-31")?.description == "9999-12-31")
        let day = try #require(LocalDay("2026-12-31"))
        #expect(day.adding(days: 1).description == "2027-01-01")
        #expect(try #require(LocalDay("2024-03-01")).adding(days: -1).description == "2024-02-29")
        #expect(try #require(LocalDay("2026-03-01")).days(since: try #require(LocalDay("2026-02-01"))) == 28)
    }

    @Test(arguments: [
        "2026-02-29", "1900-02-29", "2100-02-29", "2026-13-01", "2026-00-10", "2026-01-00", "2026-01-32",
        "2026-04-31", "0000-01-01", "2026-1-01", "2026-01-1", "26-01-01", "20260101", "", " ", "abcd-ef-gh",
        "2026-0a-01", "2026/01/01", "2026-01-01 ", " 2026-01-01", "2026-01-01T00:00", "+2026-01-01",
        "-026-01-01", "2026-+1-01", "2026--1-01",
        "\u{0662}\u{0660}\u{0662}\u{0666}-\u{0660}\u{0661}-\u{0660}\u{0661}", // Arabic-Indic digits
        "\u{FF12}\u{FF10}\u{FF12}\u{FF16}-\u{FF10}\u{FF11}-\u{FF10}\u{FF11}", // full-width digits
        "\u{0968}\u{0966}\u{0968}\u{096C}-01-01", // Devanagari digits
    ])
    func invalidDaysAreRejected(text: String) {
        #expect(LocalDay(text) == nil, "\(text.debugDescription) was accepted as \(String(describing: LocalDay(text)))")
    }

    @Test func invalidComponentsAreRejected() {
        #expect(LocalDay(year: 2026, month: 2, day: 29) == nil)
        #expect(LocalDay(year: 2026, month: 13, day: 1) == nil)
        #expect(LocalDay(year: 2026, month: 0, day: 1) == nil)
        #expect(LocalDay(year: 0, month: 1, day: 1) == nil)
        #expect(LocalDay(year: 10_000, month: 1, day: 1) == nil)
        #expect(LocalDay(year: 2026, month: 6, day: 31) == nil)
    }

    @Test func codableUsesTheTextForm() throws {
        let day = try #require(LocalDay("2026-11-23"))
        #expect(String(decoding: try WireJSON.encode([day]), as: UTF8.self) == #"["2026-11-23"]"#)
        #expect(try JSONDecoder().decode([LocalDay].self, from: frame(#"["2026-11-23"]"#)) == [day])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([LocalDay].self, from: frame(#"["2026-02-29"]"#)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([LocalDay].self, from: frame("[20261123]")) }
    }
}

@Suite("LocalTime and Weekday")
struct LocalTimeTests {
    @Test func validTimes() throws {
        for (text, minutes) in [("00:00", 0), ("18:00", 1080), ("23:59", 1439), ("09:05", 545), ("20:00", 1200)] {
            let time = try #require(LocalTime(text), "\(text)")
            #expect(time.minutesSinceMidnight == minutes)
            #expect(time.description == text)
        }
        #expect(LocalTime(hour: 7, minute: 5)?.description == "07:05")
        #expect(try #require(LocalTime("07:59")) < (try #require(LocalTime("08:00"))))
    }

    @Test(arguments: [
        "24:00", "23:60", "12:99", "7:00", "07:5", "0700", "07-00", "07:00:00", "", ":", "ab:cd", "07:00 ", " 07:00",
        "+7:00", "-1:00", "07:0a", "\u{0660}\u{0667}:\u{0660}\u{0660}", "\u{FF10}\u{FF17}:00",
    ])
    func invalidTimesAreRejected(text: String) {
        #expect(LocalTime(text) == nil, "\(text.debugDescription) was accepted")
    }

    @Test func outOfRangeComponentsAreRejected() {
        #expect(LocalTime(hour: 24, minute: 0) == nil)
        #expect(LocalTime(hour: -1, minute: 0) == nil)
        #expect(LocalTime(hour: 0, minute: 60) == nil)
    }

    @Test func weekdaysAreMondayFirstAndSpelledAsTheProtocolDoes() throws {
        #expect(Weekday.allCases.map(\.rawValue) == ["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
        #expect(Weekday.mon < .sun)
        #expect(try JSONDecoder().decode([Weekday].self, from: frame(#"["sun","mon"]"#)) == [.sun, .mon])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Weekday].self, from: frame(#"["Mon"]"#)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Weekday].self, from: frame(#"["monday"]"#)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Weekday].self, from: frame("[1]")) }
    }
}

@Suite("ZoneID")
struct ZoneIDTests {
    @Test(arguments: ["Europe/Berlin", "UTC", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Argentina/Buenos_Aires"])
    func ianaNamesAreAccepted(name: String) {
        #expect(ZoneID(name) != nil, "\(name)")
    }

    @Test(arguments: [
        "CET+1", "Mars/Olympus", "", " ", "GMT+1", "+01:00", "UTC+1", "europe/berlin", "Europe/Berlin ", " Europe/Berlin",
        "Europe/berlin", "Europe/../UTC", "../zoneinfo/UTC", "/usr/share/zoneinfo/UTC", "Europe/", "Local", "localtime", "posixrules", "posix/Europe/Berlin", "right/Europe/Berlin", "Europe", "tzdata.zi",
        String(repeating: "A", count: 65),
    ])
    func otherTextIsRejected(name: String) {
        #expect(ZoneID(name) == nil, "\(name.debugDescription) was accepted as \(String(describing: ZoneID(name)))")
    }

    @Test func berlinIsTheBerlinZone() throws {
        let zone = try #require(ZoneID("Europe/Berlin"))
        #expect(zone.identifier == "Europe/Berlin")
        #expect(zone.description == "Europe/Berlin")
        // 2026-07-01 is summer time (+02:00), 2026-01-01 winter time (+01:00).
        #expect(zone.rules.offset(at: 1_782_864_000) == 7200)
        #expect(zone.rules.offset(at: 1_767_225_600) == 3600)
        #expect(String(decoding: try WireJSON.encode([zone]), as: UTF8.self) == #"["Europe/Berlin"]"#)
    }

    /// A zone is printed as it was given: a client that sends `UTC` (the services' default `--time-zone`)
    /// must get `UTC` back, not Foundation's canonical `GMT`.
    @Test func utcIsPrintedAsUTC() throws {
        let zone = try #require(ZoneID("UTC"))
        #expect(zone.identifier == "UTC")
        #expect(ZoneID.utc.description == "UTC")
        #expect(String(decoding: try WireJSON.encode([zone]), as: UTF8.self) == #"["UTC"]"#)
        #expect(zone.rules.offset(at: Instant.now().secondsSince1970) == 0)
    }

    /// Canonical IANA identifiers that the system's tzdata has must be accepted (Foundation's
    /// `knownTimeZoneIdentifiers` missed these).
    @Test(arguments: ["Etc/UTC", "Asia/Kolkata", "Etc/GMT"])
    func canonicalIANANamesAreAccepted(name: String) throws {
        try #require(FileManager.default.fileExists(atPath: TZData.system.directory + "/" + name), "the system tzdata lacks \(name)")
        let zone = ZoneID(name)
        #expect(zone != nil, "\(name) is an IANA identifier but was rejected")
        #expect(zone?.identifier == name)
    }
}
