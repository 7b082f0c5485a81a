import Foundation

/// Where `OccurrenceCalendar` gets a zone's UTC offsets from.
public protocol UTCOffsets {
    /// The offset (seconds east of UTC) in force at `utcSeconds`.
    func offset(at utcSeconds: Int64) -> Int64
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
public final class ZoneOffsets: UTCOffsets {
    public let zone: TimeZone

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

    public init(_ zone: TimeZone) { self.zone = zone }

    public func offset(at utcSeconds: Int64) -> Int64 {
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
