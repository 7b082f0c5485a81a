import Foundation
import LHTSchema
@testable import SessionLogger
import Testing
import TestSupport

/// The session logger's filter of logged ids: never a false "no", seldom a false "maybe", and
/// neither changes as it grows past its first layer.
@Suite struct LoggedIDsTests {
    /// Ids from a fixed sequence (SplitMix64), so every run counts the same false "maybe"s.
    struct IDs {
        var state: UInt64

        mutating func next64() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        /// A version 4 id, or a version 7 one whose first 48 bits are a millisecond clock.
        mutating func next(timeOrdered: Bool, millisecond: UInt64 = 0) -> RecordID {
            var high = next64(), low = next64()
            if timeOrdered { high = millisecond << 16 | (high & 0x0FFF) | 0x7000 } else { high = high & ~0xF000 | 0x4000 }
            low = low & ~(0xC000 << 48) | (0x8000 << 48)
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in 0..<8 {
                bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
            }
            return RecordID(UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                        bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])))
        }
    }

    @Test(arguments: [false, true])
    func everyIdInsertedIsMaybeAndFewOthersAre(timeOrdered: Bool) throws {
        var generator = IDs(state: timeOrdered ? 7 : 4)
        let filter = try LoggedIDs()
        // Past the first layer (65,536 ids), so lookups cross layers; version 7 ids 50 a millisecond.
        let inserted = (0..<200_000).map { generator.next(timeOrdered: timeOrdered, millisecond: 1_780_000_000_000 + UInt64($0 / 50)) }
        for id in inserted { try filter.insert(id) }
        #expect(filter.count == inserted.count)
        #expect(try inserted.allSatisfy(filter.mayContain))
        // Of 1,000,000 ids never inserted, about 1 in 10,000 per full layer: 174 and 201 here, with two.
        let falseMaybes = try (0..<1_000_000).count { _ in try filter.mayContain(generator.next(timeOrdered: timeOrdered, millisecond: 1_790_000_000_000)) }
        #expect(falseMaybes < 500, "\(falseMaybes) false maybes in 1,000,000")
    }

    @Test func anEmptyFilterSaysNo() throws {
        var generator = IDs(state: 1)
        let filter = try LoggedIDs()
        #expect(try !(0..<10_000).contains { _ in try filter.mayContain(generator.next(timeOrdered: false)) })
    }

    /// With a file, the layers past `memoryIDs` live there: memory stays put as ids are added, and
    /// every id added is still a "maybe", as few others are, from a start's layer too.
    @Test func layersPastTheBoundLiveOnDiskAndStillSayMaybeForEveryId() throws {
        var generator = IDs(state: 11)
        let directory = temporaryDirectory("lht-logged-ids")
        let filter = try LoggedIDs(file: FilterFile(path: directory.appendingPathComponent("ids").path))
        var inserted: [RecordID] = []
        var resident: [Int] = []
        for round in 0..<4 {
            for _ in 0..<(LoggedIDs.memoryIDs / 2) { inserted.append(generator.next(timeOrdered: false)) }
            for id in inserted.suffix(LoggedIDs.memoryIDs / 2) { try filter.insert(id) }
            resident.append(filter.residentBytes)
            #expect(filter.residentBytes <= LoggedIDs.memoryIDs * LoggedIDs.bitsPerID / 8 + 4096, "round \(round)")
        }
        #expect(resident.last == resident[1], "no memory added past the bound: \(resident)")
        #expect(try inserted.allSatisfy(filter.mayContain))
        let falseMaybes = try (0..<200_000).count { _ in try filter.mayContain(generator.next(timeOrdered: false)) }
        #expect(falseMaybes < 200, "\(falseMaybes) false maybes in 200,000")

        // A start's layer sized for many ids is on disk from the first.
        let started = try LoggedIDs(expected: LoggedIDs.memoryIDs, file: FilterFile(path: directory.appendingPathComponent("start").path))
        #expect(started.residentBytes == 0)
        for id in inserted.prefix(1000) { try started.insert(id) }
        #expect(try inserted.prefix(1000).allSatisfy(started.mayContain))
    }
}
