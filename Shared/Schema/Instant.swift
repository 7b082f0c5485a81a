import Foundation
import ZoneRules

/// A point in time on the wire: RFC 3339 with `Z` or an offset, fractional seconds optional.
///
/// Kept as whole milliseconds since the epoch so that comparisons and storage are exact;
/// emitted in UTC (`Z`), with `.SSS` only when the milliseconds are not zero.
public struct Instant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let millisecondsSince1970: Int64

    public init(millisecondsSince1970: Int64) { self.millisecondsSince1970 = millisecondsSince1970 }

    public init(secondsSince1970: Int64) { millisecondsSince1970 = secondsSince1970 * 1000 }

    public init(_ date: Date) {
        millisecondsSince1970 = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    /// Whole seconds, rounded towards the past.
    public var secondsSince1970: Int64 {
        millisecondsSince1970 >= 0 ? millisecondsSince1970 / 1000 : (millisecondsSince1970 - 999) / 1000
    }

    public static func now() -> Instant { Instant(Date()) }

    public func adding(seconds: Int64) -> Instant { Instant(millisecondsSince1970: millisecondsSince1970 + seconds * 1000) }

    public func adding(milliseconds: Int64) -> Instant { Instant(millisecondsSince1970: millisecondsSince1970 + milliseconds) }

    /// Milliseconds from `other` to `self`.
    public func milliseconds(since other: Instant) -> Int64 { millisecondsSince1970 - other.millisecondsSince1970 }

    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.millisecondsSince1970 < rhs.millisecondsSince1970 }

    /// Parses RFC 3339: `YYYY-MM-DDTHH:mm:ss[.fraction](Z|±HH:mm)`; `t`/`z` and a space separator are accepted
    /// as RFC 3339 allows. Fractions beyond milliseconds are truncated.
    public init?(rfc3339 text: String) {
        // Through the contiguous bytes: copying them into arrays and strings cost three
        // allocations per instant, and every event carries one or more.
        var text = text
        guard let instant = text.withUTF8(Instant.parse) else { return nil }
        self = instant
    }

    /// The same from UTF-8 bytes.
    static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Instant? {
        guard b.count >= 20, b.count <= 40,
              let day = LocalDay.parse(UnsafeBufferPointer(rebasing: b[0..<10])),
              b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
              let hour = Digits.value(b[11..<13]), let minute = Digits.value(b[14..<16]),
              let second = Digits.value(b[17..<19]), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var index = 19
        var millis = 0
        if b[index] == UInt8(ascii: ".") {
            index += 1
            let fractionStart = index
            while index < b.count, b[index] >= UInt8(ascii: "0"), b[index] <= UInt8(ascii: "9") { index += 1 }
            let digits = index - fractionStart
            guard digits > 0 else { return nil }
            let kept = b[fractionStart..<min(index, fractionStart + 3)]
            millis = Digits.value(kept)! * (kept.count == 1 ? 100 : kept.count == 2 ? 10 : 1)
        }
        guard index < b.count else { return nil }
        var offsetSeconds = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == b.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == b.count, b[index + 3] == UInt8(ascii: ":"),
                  let offsetHours = Digits.value(b[(index + 1)..<(index + 3)]),
                  let offsetMinutes = Digits.value(b[(index + 4)..<(index + 6)]),
                  offsetHours <= 23, offsetMinutes <= 59 else { return nil }
            offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (b[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        // A leap second is read as the last second of its minute.
        let seconds = Int64(day.ordinal) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offsetSeconds)
        // Years 0001–9999 in UTC, so every accepted instant prints back in a form that parses.
        guard (-62_135_596_800...253_402_300_799).contains(seconds) else { return nil }
        return Instant(millisecondsSince1970: seconds * 1000 + Int64(millis))
    }

    /// UTC, `Z`, milliseconds only where there are any.
    public var description: String { text(withMilliseconds: true) }

    /// Seconds precision, always `Z`: the form used in occurrence identities.
    public var secondsText: String { text(withMilliseconds: false) }

    /// Written digit by digit into one buffer: this runs for every instant of every event.
    private func text(withMilliseconds: Bool) -> String {
        String(unsafeUninitializedCapacity: Instant.longestText) { write(into: $0, withMilliseconds: withMilliseconds) }
    }

    /// The length of the longest `description`.
    public static let longestText = 24

    /// Writes `description` (or `secondsText`) into `buffer`, at least `longestText` long, and
    /// returns how many bytes it wrote.
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>, withMilliseconds: Bool = true) -> Int {
        let seconds = secondsSince1970
        let millis = Int(millisecondsSince1970 - seconds * 1000)
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = LocalDay(ordinal: Int(days)).components
        var index = 0
        func put(_ value: Int, _ width: Int) {
            var remaining = value
            for offset in stride(from: width - 1, through: 0, by: -1) {
                buffer[index + offset] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            index += width
        }
        func put(_ byte: Unicode.Scalar) {
            buffer[index] = UInt8(ascii: byte)
            index += 1
        }
        put(year, 4); put("-"); put(month, 2); put("-"); put(day, 2); put("T")
        put(secondOfDay / 3600, 2); put(":"); put(secondOfDay / 60 % 60, 2); put(":"); put(secondOfDay % 60, 2)
        if withMilliseconds && millis != 0 { put("."); put(millis, 3) }
        put("Z")
        return index
    }
}


extension Instant {
    /// The local day and wall-clock time of this instant in `zone`.
    public func local(in zone: ZoneID) -> (day: LocalDay, minuteOfDay: Int, secondOfMinute: Int) {
        local(in: zone.rules)
    }

    /// The same with the zone's rules in hand.
    public func local(in rules: ZoneRules) -> (day: LocalDay, minuteOfDay: Int, secondOfMinute: Int) {
        let local = secondsSince1970 + rules.offset(at: secondsSince1970)
        let days = floorDivide(local, 86_400)
        let secondOfDay = Int(local - days * 86_400)
        return (LocalDay(ordinal: Int(days)), secondOfDay / 60, secondOfDay % 60)
    }
}
