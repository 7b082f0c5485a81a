import Foundation
import ZoneRules

/// A calendar day with no zone attached (`YYYY-MM-DD`), counted by days since 1970-01-01.
///
/// Day arithmetic is `CivilCalendar`'s integer arithmetic, so it never goes through a `Calendar`
/// and cannot be off by a DST hour.
public struct LocalDay: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Days since 1970-01-01 (negative before it).
    public let ordinal: Int

    public init(ordinal: Int) { self.ordinal = ordinal }

    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
              (1...LocalDay.daysIn(month: month, year: year)).contains(day) else { return nil }
        ordinal = CivilCalendar.days(year: year, month: month, day: day)
    }

    /// Parses exactly `YYYY-MM-DD`.
    public init?(_ text: String) {
        // Through the contiguous bytes: copying them into an array cost an allocation per day read.
        var text = text
        guard let day = text.withUTF8(LocalDay.parse) else { return nil }
        self = day
    }

    /// The same from UTF-8 bytes.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> LocalDay? {
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              let year = Digits.value(bytes[0..<4]), let month = Digits.value(bytes[5..<7]),
              let day = Digits.value(bytes[8..<10]) else { return nil }
        return LocalDay(year: year, month: month, day: day)
    }

    public var components: (year: Int, month: Int, day: Int) { CivilCalendar.date(days: ordinal) }

    public var weekday: Weekday {
        // 1970-01-01 was a Thursday.
        LocalDay.weekdays[((ordinal % 7) + 7 + 3) % 7]
    }

    private static let weekdays = Weekday.allCases

    public func adding(days: Int) -> LocalDay { LocalDay(ordinal: ordinal + days) }

    public func days(since other: LocalDay) -> Int { ordinal - other.ordinal }

    /// Written into one buffer (every decision event carries a day or two).
    public var description: String {
        let (y, m, d) = components
        return Digits.text([(y, 4), (m, 2), (d, 2)], separator: UInt8(ascii: "-"))
    }

    /// The most bytes `description` takes: a year of up to 20 digits and a sign, then `-MM-DD`.
    public static let longestText = 27

    /// Writes `description`'s bytes into `buffer` (at least `longestText` long) and returns how many.
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let (y, m, d) = components
        guard (0...9999).contains(y) else {
            // Out of range: the rare text `description` makes.
            return buffer.initialize(from: description.utf8).1
        }
        func put(_ twoDigits: Int, at offset: Int) {
            buffer[offset] = UInt8(ascii: "0") + UInt8(twoDigits / 10)
            buffer[offset + 1] = UInt8(ascii: "0") + UInt8(twoDigits % 10)
        }
        put(y / 100, at: 0)
        put(y % 100, at: 2)
        put(m, at: 5)
        put(d, at: 8)
        buffer[4] = UInt8(ascii: "-")
        buffer[7] = UInt8(ascii: "-")
        return 10
    }

    public static func < (lhs: LocalDay, rhs: LocalDay) -> Bool { lhs.ordinal < rhs.ordinal }

    static func daysIn(month: Int, year: Int) -> Int { CivilCalendar.daysIn(month: month, year: year) }
}

/// A wall-clock time of day, `HH:mm` on a 24-hour clock.
public struct LocalTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    public init?(hour: Int, minute: Int) {
        guard (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// Parses exactly `HH:mm`.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
              let hour = Digits.value(bytes[0..<2]), let minute = Digits.value(bytes[3..<5]) else { return nil }
        self.init(hour: hour, minute: minute)
    }

    public var minutesSinceMidnight: Int { hour * 60 + minute }

    public var description: String { String(unsafeUninitializedCapacity: Self.longestText) { write(into: $0) } }

    /// The length of `description`.
    public static let longestText = 5

    /// Writes `description`'s bytes into `buffer` (at least `longestText` long) and returns how many.
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        func put(_ twoDigits: Int, at offset: Int) {
            buffer[offset] = UInt8(ascii: "0") + UInt8(twoDigits / 10)
            buffer[offset + 1] = UInt8(ascii: "0") + UInt8(twoDigits % 10)
        }
        put(hour, at: 0)
        buffer[2] = UInt8(ascii: ":")
        put(minute, at: 3)
        return Self.longestText
    }

    public static func < (lhs: LocalTime, rhs: LocalTime) -> Bool {
        lhs.minutesSinceMidnight < rhs.minutesSinceMidnight
    }
}

/// ISO order, Monday first, as PROTOCOL.md spells the names.
public enum Weekday: String, CaseIterable, Codable, Sendable, Comparable {
    case mon, tue, wed, thu, fri, sat, sun

    /// 0 for Monday … 6 for Sunday.
    public var index: Int {
        switch self {
        case .mon: 0
        case .tue: 1
        case .wed: 2
        case .thu: 3
        case .fri: 4
        case .sat: 5
        case .sun: 6
        }
    }

    public static func < (lhs: Weekday, rhs: Weekday) -> Bool { lhs.index < rhs.index }
}

/// A validated IANA time zone identifier: a zone the system's tzdata has (`TZData.system`).
public struct ZoneID: Hashable, Sendable, CustomStringConvertible {
    public let identifier: String
    public var description: String { identifier }

    /// Accepts IANA names only (`Europe/Berlin`, `UTC`), not abbreviations or offsets.
    public init?(_ identifier: String) {
        guard TZData.system.rules(identifier) != nil else { return nil }
        self.identifier = identifier
    }

    /// The zone's rules as the system's tzdata has them now: a tzdata update replaces them.
    /// (A zone once read never leaves `TZData`, so the fallback is never taken.)
    public var rules: ZoneRules { TZData.system.rules(identifier) ?? .utc }

    public static let utc = ZoneID("UTC") ?? ZoneID(unchecked: "UTC")

    /// UTC is UTC even on a machine without tzdata.
    private init(unchecked identifier: String) { self.identifier = identifier }
}

enum Digits {
    static func value(_ bytes: some Collection<UInt8>) -> Int? {
        var result = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            result = result * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return bytes.isEmpty ? nil : result
    }

    /// Zero-padded fields joined by `separator`, each field's value in `0..<10^width`.
    static func text(_ fields: [(value: Int, width: Int)], separator: UInt8) -> String {
        guard fields.allSatisfy({ (0..<power(10, $0.width)).contains($0.value) }) else {
            // Out of range (a year past 9999): printed as it always was.
            return fields.map { padded($0.value, $0.width) }.joined(separator: String(UnicodeScalar(separator)))
        }
        return String(unsafeUninitializedCapacity: fields.reduce(fields.count - 1) { $0 + $1.width }) { buffer in
            var end = 0
            for (index, field) in fields.enumerated() {
                if index > 0 { buffer[end] = separator; end += 1 }
                var remaining = field.value
                for offset in stride(from: field.width - 1, through: 0, by: -1) {
                    buffer[end + offset] = UInt8(ascii: "0") + UInt8(remaining % 10)
                    remaining /= 10
                }
                end += field.width
            }
            return end
        }
    }

    private static func power(_ base: Int, _ exponent: Int) -> Int { (0..<exponent).reduce(1) { result, _ in result * base } }

    static func padded(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}



