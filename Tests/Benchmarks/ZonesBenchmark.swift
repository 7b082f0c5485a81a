import Foundation
import LHTSchema
import ReminderPlanning
import ZoneRules

/// `bench zones [--quick] [--rounds 5]`
///
/// The planner's occurrence computation (`OccurrenceCalendar.next`, as scheduling runs it) with the
/// zone rules it uses, `ZoneRules` from the system's tzdata, beside the offsets it used before:
/// Foundation's `TimeZone` behind a cache of blocks of its transitions (`FoundationZoneOffsets`,
/// the former `ZoneOffsets`, kept here as the baseline). Daily and weekday rules at every quarter
/// hour, from starts spread over 2026 and 2027, in zones with and without daylight saving time;
/// both sources interleaved, round by round, and the medians compared. The two must also agree on
/// every occurrence (while the toolchain's ICU data and the system's tzdata are the same version).
enum ZonesBenchmark {
    static let zones = ["Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "Asia/Kolkata",
                        "America/Sao_Paulo", "Pacific/Auckland", "UTC"]

    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let rounds = Options.int(arguments, "--rounds", quick ? 3 : 5)
        let starts = stride(from: Int64(1_767_225_600), to: 1_830_297_600, by: quick ? 86_400 * 7 : 86_400).map { Instant(secondsSince1970: $0 + 3_600 * 5) }
        let times = stride(from: 0, to: 24 * 60, by: 15).map { LocalTime(hour: $0 / 60, minute: $0 % 60)! }
        let masks = [WeekdayMask(Weekday.allCases), WeekdayMask([.mon, .wed, .fri])]
        let count = zones.count * starts.count * times.count * masks.count
        print("\(count) occurrences per round: \(zones.count) zones × \(starts.count) starts × \(times.count) times × \(masks.count) rules")

        func pass(_ offsets: (String) -> any UTCOffsets) -> (seconds: Double, result: [Int64]) {
            var result: [Int64] = []
            result.reserveCapacity(count)
            let started = DispatchTime.now().uptimeNanoseconds
            for zone in zones {
                let source = offsets(zone)
                for start in starts {
                    for time in times {
                        for mask in masks { result.append(next(time, mask, source, start)) }
                    }
                }
            }
            return (Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9, result)
        }
        var tzif: [Double] = [], foundation: [Double] = []
        var mismatches = 0
        for _ in 0..<rounds {
            // Fresh caches each round, as a planner builds its own; ZoneRules are read once per process.
            let base = pass { FoundationZoneOffsets(TimeZone(identifier: $0)!) }
            let read = pass { TZData.system.rules($0)! }
            foundation.append(base.seconds)
            tzif.append(read.seconds)
            mismatches = zip(base.result, read.result).filter { $0 != $1 }.count
        }
        let (a, b) = (median(tzif), median(foundation))
        print(String(format: "ZoneRules (tzdata %@): %.0f ns/occurrence (median of %d rounds)", TZData.system.version, a / Double(count) * 1e9, rounds))
        print(String(format: "FoundationZoneOffsets (ICU %@): %.0f ns/occurrence", TimeZone.timeZoneDataVersion, b / Double(count) * 1e9))
        Target.report(String(format: "ZoneRules %.0f ns/occurrence", a / Double(count) * 1e9), ratio: String(format: "%.2f × Foundation", a / b),
                      target: "≤ 1.00 × Foundation", met: a <= b)
        if mismatches > 0 { print("\(mismatches) occurrences differ between the two rule sources") }
    }

    /// Specialized per source, as the scheduler's generic call is.
    private static func next(_ time: LocalTime, _ mask: WeekdayMask, _ source: any UTCOffsets, _ start: Instant) -> Int64 {
        func typed(_ offsets: some UTCOffsets) -> Int64 {
            OccurrenceCalendar.next(at: time, on: mask, in: offsets, from: start)?.at.millisecondsSince1970 ?? 0
        }
        return typed(source)
    }

    private static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
}

/// The reference: Foundation's zone, asked for every instant (a lock and ICU calls each time).
extension TimeZone: UTCOffsets {
    public func offset(at utcSeconds: Int64) -> Int64 {
        Int64(secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(utcSeconds))))
    }
}

/// A zone's offsets remembered as the zone's own transitions, block by block of UTC time: the
/// same answers as `TimeZone`, without asking Foundation for each occurrence (two or three
/// `secondsFromGMT` calls each were most of scheduling a reminder).
///
/// A block is built from Foundation once: the offset at its start, then each transition inside it
/// (`nextDaylightSavingTimeTransition`, which ICU reports for every offset change, not only DST).
/// A transition whose offset just before it disagrees with the one remembered means a change was
/// not reported: that block is not cached and every lookup in it asks the zone.
///
/// Not thread-safe (it fills itself in): one per zone per owner, like the planner's scheduler.
final class FoundationZoneOffsets: UTCOffsets {
    let zone: TimeZone

    /// 2^22 s ≈ 48.5 days: a handful of blocks span the few weeks a planner looks at.
    static let blockShift: Int64 = 22

    /// Offsets from the block's start: `starts[i]` is the first second of `offsets[i]`.
    private struct Block {
        let starts: [Int64]
        let offsets: [Int64]
        /// Every change inside the block was reported; otherwise lookups ask the zone.
        let complete: Bool

        func offset(at utcSeconds: Int64) -> Int64 {
            var index = starts.count - 1
            while starts[index] > utcSeconds { index -= 1 }
            return offsets[index]
        }
    }

    private var blocks: [Int64: Block] = [:]
    /// The last block looked up: consecutive lookups nearly always fall in it.
    private var recent: (index: Int64, block: Block)?

    init(_ zone: TimeZone) { self.zone = zone }

    func offset(at utcSeconds: Int64) -> Int64 {
        let index = utcSeconds >> Self.blockShift
        let block: Block
        if let recent, recent.index == index {
            block = recent.block
        } else {
            block = blocks[index] ?? build(index)
            recent = (index, block)
        }
        return block.complete ? block.offset(at: utcSeconds) : zone.offset(at: utcSeconds)
    }

    private func build(_ index: Int64) -> Block {
        let start = index << Self.blockShift, end = (index + 1) << Self.blockShift
        var starts = [start], offsets = [zone.offset(at: start)]
        var complete = true
        var cursor = Date(timeIntervalSince1970: TimeInterval(start))
        while let next = zone.nextDaylightSavingTimeTransition(after: cursor) {
            let utc = Int64(next.timeIntervalSince1970.rounded(.down))
            guard utc < end else { break }
            if zone.offset(at: utc - 1) != offsets.last! { complete = false }
            let offset = zone.offset(at: utc)
            if offset != offsets.last! {
                starts.append(utc)
                offsets.append(offset)
            }
            cursor = next
        }
        // A change between the last reported transition and the block's end was not reported either.
        if zone.offset(at: end - 1) != offsets.last! { complete = false }
        let block = Block(starts: starts, offsets: offsets, complete: complete)
        blocks[index] = block
        return block
    }
}
