import Foundation
import Testing
import TestSupport
@testable import LHTSchema

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
            #expect(String(decoding: try WireJSON.encode([instant]), as: UTF8.self) == "[\"\(printed)\"]")
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

    /// An offset may carry a text just inside 0001...9999 outside it: such a text is refused, so that
    /// every accepted instant prints as one that parses again (a stored `start` must be readable by
    /// every client).
    @Test(arguments: [
        "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59.999-00:01", "9999-12-31T12:00:00-12:00",
        "0001-01-01T00:00:00+00:01", "0001-01-01T00:00:00+23:59", "0001-01-01T11:59:59+12:00",
    ])
    func instantsOutsideTheCalendarInUTCAreRefused(text: String) {
        #expect(Instant(rfc3339: text) == nil)
    }

    /// Texts near the ends whose instant stays inside 0001...9999 in UTC are accepted and print parseably.
    @Test(arguments: [
        "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999+00:01", "9999-12-31T23:59:59+23:59",
        "0001-01-01T00:00:00Z", "0001-01-01T00:00:00-00:01", "0001-01-01T11:59:59-12:00",
    ])
    func acceptedInstantsNearTheEndsOfTheCalendarPrintParseably(text: String) throws {
        let instant = try #require(Instant(rfc3339: text))
        #expect(Instant(rfc3339: instant.description) == instant, "\(text) was accepted and prints as \(instant), which is refused")
    }

    @Test func dateConversionRoundsTowardsThePast() {
        #expect(Instant(Date(timeIntervalSince1970: 1.0009)).millisecondsSince1970 == 1000)
        #expect(Instant(Date(timeIntervalSince1970: -0.0005)).millisecondsSince1970 == -1)
        #expect(Instant(millisecondsSince1970: Self.base).date == Date(timeIntervalSince1970: 1_795_425_300))
        #expect(Instant(secondsSince1970: 5).adding(seconds: 1).adding(milliseconds: 1).millisecondsSince1970 == 6001)
    }
}
