import Foundation
import LHTSchema
import ZoneRules

/// One occurrence of a reminder rule (SEMANTICS §1).
///
/// `day` and `weekday` are the *rule* day D (what `reminder.upcoming` selects by and what the
/// weekday filter matched), while `at` and `localTime` say when it really happens: a 23:30 rule
/// whose day has a 23:00–24:00 gap happens at 00:30 of the next calendar day but stays D's.
public struct PlannedOccurrence: Sendable, Hashable, CustomStringConvertible {
    public let day: LocalDay
    public let weekday: Weekday
    public let at: Instant
    /// The real wall-clock time of `at` in the zone (03:30 for a 02:30 rule moved by a spring-forward gap).
    public let localTime: LocalTime

    public init(day: LocalDay, weekday: Weekday, at: Instant, localTime: LocalTime) {
        self.day = day
        self.weekday = weekday
        self.at = at
        self.localTime = localTime
    }

    public var description: String { "\(day) \(weekday.rawValue) \(localTime) (\(at))" }
}

/// Turns a reminder rule (time of day, weekdays, zone) into occurrence instants.
///
/// Every instant is computed from the rule day and the zone's UTC offsets — never by "the next
/// time the components match, counting from now", which is how the seed app pushed triggers a
/// week out (SEMANTICS §1, seed `004_…`). DST follows RFC 5545: a wall time in a spring-forward
/// gap moves forward by the gap's length, a wall time that occurs twice takes the earlier instant.
/// Both are "wall time minus the offset in force just before the transition".
///
/// Cost: one occurrence is two offset lookups on ordinary days (a few more next to a transition);
/// days are iterated with integer arithmetic on `LocalDay`. No `Calendar`. Offsets come from the
/// zone's `ZoneRules` (the system's tzdata).
public enum OccurrenceCalendar {
    /// The occurrence of rule time `time` on rule day `day` in `zone`, or nil when that local day
    /// does not exist at all (Pacific/Apia skipped 2011-12-30 when it crossed the date line).
    public static func occurrence(on day: LocalDay, at time: LocalTime, in zone: some UTCOffsets) -> PlannedOccurrence? {
        occurrence(on: day, weekday: WeekdayMask.weekday(of: day), at: time, in: zone)
    }

    /// Every occurrence whose rule day lies in `days` and whose weekday is selected, in time order.
    public static func occurrences(at time: LocalTime, on weekdays: some Sequence<Weekday>, in zone: some UTCOffsets,
                                   days: ClosedRange<LocalDay>) -> [PlannedOccurrence] {
        collect(time: time, mask: WeekdayMask(weekdays), zone: zone,
                ordinals: days.lowerBound.ordinal...days.upperBound.ordinal) { _ in true }
    }

    /// Every occurrence with `from <= at <= through`, in time order. Rule days are found by
    /// arithmetic alone: any zone offset lies within ±`offsetBoundSeconds`, so only the days whose
    /// wall time can map into the interval are resolved.
    public static func occurrences(at time: LocalTime, on weekdays: some Sequence<Weekday>, in zone: some UTCOffsets,
                                   from: Instant, through: Instant) -> [PlannedOccurrence] {
        guard from <= through else { return [] }
        let ordinals = candidateOrdinals(time: time, from: from, through: through)
        return collect(time: time, mask: WeekdayMask(weekdays), zone: zone, ordinals: ordinals) {
            $0.at >= from && $0.at <= through
        }
    }

    /// The first occurrence with `at >= from` (`from` itself included, so an occurrence exactly at a
    /// reminder's creation instant counts). Nil only when `weekdays` is empty.
    public static func next(at time: LocalTime, on weekdays: some Sequence<Weekday>, in zone: some UTCOffsets,
                            from: Instant) -> PlannedOccurrence? {
        next(at: time, on: WeekdayMask(weekdays), in: zone, from: from)
    }

    /// `next(at:on:in:from:)` with the weekdays as a mask, as the scheduler keeps them.
    public static func next(at time: LocalTime, on mask: WeekdayMask, in zone: some UTCOffsets, from: Instant) -> PlannedOccurrence? {
        guard !mask.isEmpty else { return nil }
        let first = candidateOrdinals(time: time, from: from, through: from).lowerBound
        // A selected weekday comes round within 7 days; skipped days (Apia) cost at most one more
        // week. The bound only guards against a broken zone.
        for ordinal in first...(first + 400) where mask.contains(ordinal: ordinal) {
            let day = LocalDay(ordinal: ordinal)
            if let occurrence = occurrence(on: day, weekday: WeekdayMask.weekday(of: day), at: time, in: zone),
               occurrence.at >= from {
                return occurrence
            }
        }
        return nil
    }

    /// The occurrence that happens exactly at `at`, if the rule has one there (e.g. to check the
    /// `at` of `reminder.restore`).
    public static func occurrence(exactlyAt at: Instant, time: LocalTime, on weekdays: some Sequence<Weekday>,
                                  in zone: some UTCOffsets) -> PlannedOccurrence? {
        occurrences(at: time, on: weekdays, in: zone, from: at, through: at).first
    }

    // MARK: - Internals

    /// No zone has ever been further than ±16 h from UTC (local mean times of the 19th century
    /// included; today ±14 h); 18 h leaves room without resolving extra days.
    static let offsetBoundSeconds: Int64 = 18 * 3600

    static let secondsPerDay: Int64 = 86_400

    /// Rule days D whose occurrence can fall in `[from, through]`: `at = wall(D) − offset` with
    /// |offset| ≤ the bound, and a gap shift is still "wall minus a real offset".
    static func candidateOrdinals(time: LocalTime, from: Instant, through: Instant) -> ClosedRange<Int> {
        let timeSeconds = Int64(time.minutesSinceMidnight) * 60
        let low = floorDivide(from.secondsSince1970 - offsetBoundSeconds - timeSeconds, secondsPerDay)
        let high = floorDivide(through.secondsSince1970 + offsetBoundSeconds - timeSeconds, secondsPerDay)
        return Int(low)...Int(max(low, high))
    }

    private static func collect(time: LocalTime, mask: WeekdayMask, zone: some UTCOffsets, ordinals: ClosedRange<Int>,
                                where keep: (PlannedOccurrence) -> Bool) -> [PlannedOccurrence] {
        guard !mask.isEmpty else { return [] }
        var result: [PlannedOccurrence] = []
        var ordered = true
        for ordinal in ordinals where mask.contains(ordinal: ordinal) {
            let day = LocalDay(ordinal: ordinal)
            guard let occurrence = occurrence(on: day, weekday: WeekdayMask.weekday(of: day), at: time, in: zone),
                  keep(occurrence) else { continue }
            if let last = result.last, last.at >= occurrence.at { ordered = false }
            result.append(occurrence)
        }
        // Consecutive rule days give increasing instants in every real zone (a gap shift is shorter
        // than a day, and whole-day jumps remove the day instead); sort anyway if that ever fails.
        if !ordered { result.sort { ($0.at, $0.day) < ($1.at, $1.day) } }
        return result
    }

    private static func occurrence(on day: LocalDay, weekday: Weekday, at time: LocalTime,
                                   in zone: some UTCOffsets) -> PlannedOccurrence? {
        let dayStart = Int64(day.ordinal) * secondsPerDay
        let wall = dayStart + Int64(time.minutesSinceMidnight) * 60
        let utc: Int64
        let offsetInForce: Int64
        switch resolve(wall: wall, in: zone) {
        case let .exists(instant, offset):
            utc = instant
            offsetInForce = offset
        case let .gap(instant, before, after):
            // Only a jump of a whole day or more (the date line) can swallow a local day.
            if after - before >= secondsPerDay, isInGap(dayStart, zone), isInGap(dayStart + secondsPerDay - 1, zone) {
                return nil
            }
            utc = instant
            offsetInForce = after
        }
        let secondOfDay = floorMod(utc + offsetInForce, secondsPerDay)
        let localTime = LocalTime(hour: Int(secondOfDay / 3600), minute: Int(secondOfDay / 60 % 60))!
        return PlannedOccurrence(day: day, weekday: weekday, at: Instant(secondsSince1970: utc), localTime: localTime)
    }

    enum Resolution: Equatable {
        /// The wall time exists; `utc` is its (earlier, if repeated) instant, `offset` the offset there.
        case exists(utc: Int64, offset: Int64)
        /// The wall time falls in a gap; `utc` is wall − `before`, which real clocks show as wall + (after − before).
        case gap(utc: Int64, before: Int64, after: Int64)
    }

    /// Resolves a wall time (seconds since 1970-01-01T00:00 local) to a UTC instant.
    ///
    /// `before` is the offset a day earlier, i.e. the one in force before any transition that can
    /// touch this wall time (offsets are far below a day). If `wall − before` really has offset
    /// `before`, it is the answer — and the earlier one when the wall time is repeated. Otherwise a
    /// transition lies in between: try the new offset; if that is not self-consistent either, the
    /// wall time is in the gap and RFC 5545 wants `wall − before`.
    static func resolve(wall: Int64, in zone: some UTCOffsets) -> Resolution {
        let before = zone.offset(at: wall - secondsPerDay)
        let early = wall - before
        let atEarly = zone.offset(at: early)
        if atEarly == before { return .exists(utc: early, offset: before) }
        let late = wall - atEarly
        if zone.offset(at: late) == atEarly { return .exists(utc: late, offset: atEarly) }
        return .gap(utc: early, before: before, after: atEarly)
    }

    private static func isInGap(_ wall: Int64, _ zone: some UTCOffsets) -> Bool {
        if case .gap = resolve(wall: wall, in: zone) { return true }
        return false
    }
}

/// Seven bits, Monday = bit 0: the weekday filter without hashing a `Set` per day.
public struct WeekdayMask: Sendable, Hashable {
    public let bits: UInt8

    /// Inlinable so callers get it specialized for their collection (an unspecialized generic loop
    /// was a tenth of scheduling an occurrence).
    @inlinable
    public init(_ weekdays: some Sequence<Weekday>) {
        var bits: UInt8 = 0
        for weekday in weekdays { bits |= 1 << weekday.index }
        self.init(bits: bits)
    }

    public init(bits: UInt8) { self.bits = bits & 0x7F }

    public var isEmpty: Bool { bits == 0 }

    func contains(ordinal: Int) -> Bool { bits & (1 << WeekdayMask.index(ofOrdinal: ordinal)) != 0 }

    /// Same rule as `LocalDay.weekday` (1970-01-01 was a Thursday).
    static func index(ofOrdinal ordinal: Int) -> Int { ((ordinal % 7) + 7 + 3) % 7 }

    static func weekday(of day: LocalDay) -> Weekday { day.weekday }

}

@inline(__always)
func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDivide(a, b) * b }
