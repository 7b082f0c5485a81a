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
        #expect(String(decoding: try wireEncoder().encode([day]), as: UTF8.self) == #"["2026-11-23"]"#)
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

@Suite("Instant (RFC 3339)")
struct InstantTests {
    /// 2026-11-23T09:15:00Z.
    static let base: Int64 = 1_795_425_300_000

    static let accepted: [(String, Int64)] = [
        ("2026-11-23T09:15:00Z", base),
        ("2026-11-23T10:15:00+01:00", base),
        ("2026-11-23T04:45:00-04:30", base),
        ("2026-11-23T09:15:00+00:00", base),
        ("2026-11-23T09:15:00-00:00", base),
        ("2026-11-23t09:15:00z", base),
        ("2026-11-23t10:15:00+01:00", base),
        ("2026-11-24T09:14:00+23:59", base),
        ("2026-11-22T09:16:00-23:59", base),
        ("2026-11-23T09:15:00.5Z", base + 500),
        ("2026-11-23T09:15:00.12Z", base + 120),
        ("2026-11-23T09:15:00.123Z", base + 123),
        ("2026-11-23T09:15:00.1234Z", base + 123),
        ("2026-11-23T09:15:00.12345Z", base + 123),
        ("2026-11-23T09:15:00.123456Z", base + 123),
        ("2026-11-23T09:15:00.1234567Z", base + 123),
        ("2026-11-23T09:15:00.12345678Z", base + 123),
        ("2026-11-23T09:15:00.123456789Z", base + 123),
        ("2026-11-23T10:15:00.999999999+01:00", base + 999),
        ("2026-11-23T09:15:00.000000001Z", base),
        ("2026-11-23T09:15:00.000Z", base),
        ("2026-11-23T10:15:00.250+01:00", base + 250),
        ("1970-01-01T00:00:00Z", 0),
        ("1969-12-31T23:59:59Z", -1000),
        ("1969-12-31T23:59:59.999Z", -1),
        ("2000-02-29T12:00:00Z", 951_825_600_000),
        ("2026-03-29T03:00:00+02:00", 1_774_746_000_000),
        ("0001-01-01T00:00:00Z", -62_135_596_800_000),
        ("9999-12-31T23:59:59Z", 253_402_300_799_000),
    ]

    @Test func acceptedForms() {
        for (text, millis) in Self.accepted {
            #expect(Instant(rfc3339: text)?.millisecondsSince1970 == millis, "\(text)")
        }
    }

    @Test(arguments: [
        "2026-11-23T09:15:00", "2026-11-23T09:15:00.123", "2026-11-23", "2026-11-23T09:15Z", "2026-11-23T09:15",
        "2026-11-23T24:00:00Z", "2026-11-23T23:60:00Z", "2026-11-23T09:15:61Z", "2026-11-23T9:15:00Z",
        "2026-11-23T09:15:00+24:00", "2026-11-23T09:15:00+01:60", "2026-11-23T09:15:00+0100", "2026-11-23T09:15:00+01",
        "2026-11-23T09:15:00+1:00", "2026-11-23T09:15:00+01:0", "2026-11-23T09:15:00+01:00:00", "2026-11-23T09:15:00 +01:00",
        "2026-11-23T09:15:00UTC", "2026-11-23T09:15:00GMT", "2026-11-23T09:15:00ZZ", "2026-11-23T09:15:00Z ",
        " 2026-11-23T09:15:00Z", "2026-11-23T09:15:00Zjunk", "2026-11-23T09:15:00+01:00junk", "2026-11-23T09:15:00Z\n",
        "2026-11-23T09:15:00.Z", "2026-11-23T09:15:00,5Z", "2026-11-23T09:15:00.5.5Z", "2026-11-23X09:15:00Z",
        "2026-11-23_09:15:00Z", "2026-02-29T09:15:00Z", "2026-13-01T09:15:00Z", "2026-11-23T09:15:00.-5Z",
        "", "Z", "now", "1795425300", "2026-11-23T\u{FF10}9:15:00Z", "2026-11-23T09:15:00\u{2212}01:00",
    ])
    func rejectedForms(text: String) {
        #expect(Instant(rfc3339: text) == nil, "\(text.debugDescription) was accepted as \(String(describing: Instant(rfc3339: text)))")
    }

    @Test func printsUTCWithMillisecondsOnlyWhenNonZero() throws {
        let cases: [(String, String)] = [
            ("2026-11-23T10:15:00+01:00", "2026-11-23T09:15:00Z"),
            ("2026-11-23T09:15:00.5Z", "2026-11-23T09:15:00.500Z"),
            ("2026-11-23T09:15:00.000Z", "2026-11-23T09:15:00Z"),
            ("2026-11-23T09:15:00.007Z", "2026-11-23T09:15:00.007Z"),
            ("2026-11-23T10:15:00.123456789+01:00", "2026-11-23T09:15:00.123Z"),
            ("2026-11-23t09:15:00z", "2026-11-23T09:15:00Z"),
            ("1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"),
            ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),
            ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ]
        for (input, printed) in cases {
            let instant = try #require(Instant(rfc3339: input), "\(input)")
            #expect(instant.description == printed)
            #expect(String(decoding: try wireEncoder().encode([instant]), as: UTF8.self) == "[\"\(printed)\"]")
        }
    }

    @Test func secondsTextHasSecondsPrecisionAndZ() {
        #expect(Instant(millisecondsSince1970: Self.base + 123).secondsText == "2026-11-23T09:15:00Z")
        #expect(Instant(millisecondsSince1970: Self.base + 999).secondsText == "2026-11-23T09:15:00Z")
        #expect(Instant(millisecondsSince1970: Self.base).secondsText == "2026-11-23T09:15:00Z")
        #expect(Instant(millisecondsSince1970: -1).secondsText == "1969-12-31T23:59:59Z")
        #expect(Instant(millisecondsSince1970: -1000).secondsText == "1969-12-31T23:59:59Z")
        #expect(Instant(millisecondsSince1970: -1001).secondsText == "1969-12-31T23:59:58Z")
        #expect(Instant(millisecondsSince1970: -1).secondsSince1970 == -1)
        #expect(Instant(millisecondsSince1970: -1000).secondsSince1970 == -1)
        #expect(Instant(millisecondsSince1970: -1001).secondsSince1970 == -2)
        #expect(Instant(millisecondsSince1970: 1999).secondsSince1970 == 1)
    }

    /// Random instants over years 1..9999 print in the documented shape and parse back to themselves;
    /// between 1900 and 2100 the printed fields agree with Foundation's calendar.
    @Test func printingRoundTripsAndAgreesWithFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(secondsFromGMT: 0))
        var random = SplitMix64(seed: 0x1257A47)
        let low: Int64 = -62_135_596_800_000
        let high: Int64 = 253_402_300_799_999
        let low1900: Int64 = -2_208_988_800_000
        let span1900To2100: Int64 = 6_342_969_600_000
        var failures: [String] = []
        for index in 0..<5_000 {
            var millis: Int64
            if index % 2 == 0 {
                millis = low1900 + Int64(random.next() % UInt64(span1900To2100))
            } else {
                millis = low + Int64(random.next() % UInt64(high - low + 1))
            }
            if index % 5 == 0 { millis -= millis % 1000 }  // whole seconds often, to cover the short form
            let instant = Instant(millisecondsSince1970: millis)
            let text = instant.description
            let bytes = Array(text.utf8)
            let hasMillis = millis % 1000 != 0
            if bytes.count != (hasMillis ? 24 : 20) || bytes.last != UInt8(ascii: "Z") { failures.append("\(millis): \(text)") }
            if Instant(rfc3339: text) != instant { failures.append("\(millis): \(text) parses as \(String(describing: Instant(rfc3339: text)))") }
            if !instant.secondsText.hasSuffix("Z") || instant.secondsText.utf8.count != 20
                || Instant(rfc3339: instant.secondsText)?.millisecondsSince1970 != instant.secondsSince1970 * 1000 {
                failures.append("\(millis): secondsText \(instant.secondsText)")
            }
            if millis >= low1900, millis < low1900 + span1900To2100 {
                let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: instant.date)
                let expected = String(c.year!).leftPadded(to: 4) + "-" + String(c.month!).leftPadded(to: 2) + "-"
                    + String(c.day!).leftPadded(to: 2) + "T" + String(c.hour!).leftPadded(to: 2) + ":"
                    + String(c.minute!).leftPadded(to: 2) + ":" + String(c.second!).leftPadded(to: 2)
                if !text.hasPrefix(expected) { failures.append("\(millis): \(text) vs Foundation \(expected)") }
            }
            if failures.count > 10 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// An offset may carry a text just inside 0001...9999 outside it; whatever is accepted must print as an
    /// instant that parses again (a stored `start` must be readable by every client).
    @Test(arguments: [
        "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59.999-00:01", "9999-12-31T12:00:00-12:00",
        "0001-01-01T00:00:00+00:01", "0001-01-01T00:00:00+23:59", "0001-01-01T11:59:59+12:00",
    ])
    func acceptedInstantsNearTheEndsOfTheCalendarPrintParseably(text: String) {
        if let instant = Instant(rfc3339: text) {
            #expect(Instant(rfc3339: instant.description) == instant, "\(text) was accepted and prints as \(instant), which is refused")
        }
    }

    @Test func dateConversionRoundsTowardsThePast() {
        #expect(Instant(Date(timeIntervalSince1970: 1.0009)).millisecondsSince1970 == 1000)
        #expect(Instant(Date(timeIntervalSince1970: -0.0005)).millisecondsSince1970 == -1)
        #expect(Instant(millisecondsSince1970: Self.base).date == Date(timeIntervalSince1970: 1_795_425_300))
        #expect(Instant(secondsSince1970: 5).adding(seconds: 1).adding(milliseconds: 1).millisecondsSince1970 == 6001)
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
        #expect(String(decoding: try wireEncoder().encode([zone]), as: UTF8.self) == #"["Europe/Berlin"]"#)
    }

    /// A zone is printed as it was given: a client that sends `UTC` (the services' default `--time-zone`)
    /// must get `UTC` back, not Foundation's canonical `GMT`.
    @Test func utcIsPrintedAsUTC() throws {
        let zone = try #require(ZoneID("UTC"))
        #expect(zone.identifier == "UTC")
        #expect(ZoneID.utc.description == "UTC")
        #expect(String(decoding: try wireEncoder().encode([zone]), as: UTF8.self) == #"["UTC"]"#)
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

@Suite("UserID and RecordID")
struct IdentifierTests {
    @Test(arguments: ["henning", "u1", "A", "Z9", "a_b-c", "UPPER_lower-123", String(repeating: "x", count: 64), "-", "_"])
    func validUserIDs(text: String) throws {
        let id = try #require(UserID(text))
        #expect(id.rawValue == text)
        #expect(id.description == text)
        #expect(String(decoding: try wireEncoder().encode([id]), as: UTF8.self) == "[\"\(text)\"]")
    }

    @Test(arguments: [
        "", "a.b", "hen ning", " henning", "henning ", "j\u{FC}rgen", "ju\u{308}rgen", String(repeating: "x", count: 65),
        "a/b", "a\\b", "a:b", "a@b", "a+b", "a\u{0}", "a\n", "\u{0661}", "\u{FF41}", "\u{1F600}", "notify.u1",
        String(repeating: "\u{FC}", count: 32),
    ])
    func invalidUserIDs(text: String) {
        #expect(UserID(text) == nil, "\(text.debugDescription) was accepted")
    }

    @Test func recordIDsAcceptEitherCaseAndPrintLowerCase() throws {
        let upper = try #require(RecordID("3F2B8C1E-ABCD-4000-8000-0000000000FF"))
        let lower = try #require(RecordID("3f2b8c1e-abcd-4000-8000-0000000000ff"))
        let mixed = try #require(RecordID("3f2B8c1E-AbCd-4000-8000-0000000000fF"))
        #expect(upper == lower)
        #expect(mixed == lower)
        #expect(upper.hashValue == lower.hashValue)
        #expect(upper.description == "3f2b8c1e-abcd-4000-8000-0000000000ff")
        #expect(String(decoding: try wireEncoder().encode([upper]), as: UTF8.self) == #"["3f2b8c1e-abcd-4000-8000-0000000000ff"]"#)
        #expect(try JSONDecoder().decode([RecordID].self, from: frame(#"["3F2B8C1E-ABCD-4000-8000-0000000000FF"]"#)) == [lower])
        let fresh = RecordID()
        #expect(fresh.description == fresh.description.lowercased())
        #expect(RecordID(fresh.description) == fresh)
    }

    /// The text is Foundation's `uuidString`, lower-cased, for every byte value at every position
    /// (each digit's letter-or-number decision is made eight at a time) and for random ids.
    @Test func recordIDTextIsFoundationsForEveryByteAtEveryPosition() {
        var random = SplitMix64(seed: 0x1D_7E47)
        var ids: [UUID] = [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))]
        for position in 0..<16 {
            for byte in 0...255 {
                var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: 16)
                bytes[position] = UInt8(byte)
                ids.append(bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) })
            }
        }
        for _ in 0..<10_000 {
            ids.append(withUnsafeBytes(of: (random.next(), random.next())) { UUID(uuid: $0.load(as: uuid_t.self)) })
        }
        let wrong = ids.filter { RecordID($0).description != $0.uuidString.lowercased() }
        #expect(wrong.isEmpty, "\(wrong.prefix(3).map { ($0.uuidString, RecordID($0).description) })")
    }

    @Test(arguments: [
        "", "not-a-uuid", "3f2b8c1eabcd40008000000000000000ff", "3f2b8c1e-abcd-4000-8000-0000000000f",
        "3f2b8c1e-abcd-4000-8000-0000000000fff", "{3f2b8c1e-abcd-4000-8000-0000000000ff}", " 3f2b8c1e-abcd-4000-8000-0000000000f",
        "3f2b8c1e-abcd-4000-8000-0000000000ff ", "3g2b8c1e-abcd-4000-8000-0000000000ff", "3f2b8c1e_abcd_4000_8000_0000000000ff",
        "henning@2026-11-23T09:15:00Z",
        // Foundation's UUID(uuidString:) on Linux skips white space inside groups (and then misreads them).
        "\t3f2b8c1e-abcd-4000-8000-0000000000f", "3f2b8c1e- bcd-4000-8000-0000000000ff", "3f2b8c1e-abcd- 400-8000-0000000000ff",
        "3f2b8c1e-abcd-4000-8000- 000000000ff",
        // Bytes next to the digits' and letters' ranges, and a dash where a digit belongs.
        "3f2b8c1e-abcd-4000-8000-0000000000f:", "3f2b8c1e-abcd-4000-8000-0000000000f@", "3f2b8c1e-abcd-4000-8000-0000000000f`",
        "3f2b8c1e-abcd-4000-8000-0000000000fG", "3f2b8c1e-abcd-4000-8000-00000000-0ff",
    ])
    func invalidRecordIDs(text: String) {
        #expect(RecordID(text) == nil, "\(text.debugDescription) was accepted")
    }
}
