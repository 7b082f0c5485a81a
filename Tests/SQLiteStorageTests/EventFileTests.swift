import Foundation
import GRDB
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// The log as a file of its own (`EventFile`; docs/decisions/0001-event-file-log.md).
@Suite struct EventFileTests {
    let directory = temporaryDirectory("lht-event-file")
    var path: String { directory.appendingPathComponent("log.events").path }

    static func events(_ seqs: ClosedRange<Int64>, envelopeBytes: Int = 40) -> [PendingEvent] {
        seqs.map { seq in
            PendingEvent(type: "session.logged", seq: seq, topic: "session.logged.user\(seq % 3).mindfulness",
                         envelope: Data(#"{"seq":\#(seq),"pad":"\#(String(repeating: "x", count: envelopeBytes))"}"#.utf8))
        }
    }

    func records(_ file: EventFile, after seq: Int64 = 0) throws -> [PendingEvent] {
        var read: [PendingEvent] = []
        try file.forEach(after: seq, through: .max) { seq, topic, envelope in
            read.append(PendingEvent(type: "session.logged", seq: seq, topic: String(decoding: topic, as: UTF8.self), envelope: Data(envelope)))
            return true
        }
        return read
    }

    func size() throws -> Int { try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? -1 }

    @Test func theChecksumIsCRC32C() {
        // The check value every CRC-32C implementation gives for these nine bytes.
        for checksum in [CRC32C.checksum, CRC32C.tableChecksum] {
            #expect(Array("123456789".utf8).withUnsafeBytes { checksum($0) } == 0xE306_9283)
            #expect([UInt8]().withUnsafeBytes { checksum($0) } == 0)
        }
    }

    @Test(.enabled(if: CRC32C.hardware, "the processor has no crc32 instruction"))
    func theInstructionAndTheTablesAgree() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<1_100).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            // Every length across the 8-byte steps and the bytes after them, from every alignment.
            for start in 0..<8 {
                for count in 0...(all.count - start) where count < 80 || count % 97 == 0 || count == all.count - start {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + count)])
                    #expect(CRC32C.checksum(slice) == CRC32C.tableChecksum(slice), "from \(start), \(count) bytes")
                }
            }
        }
    }

    @Test func recordsReadBackInOrderWithTheirIdentityAfterAReopen() throws {
        let identity = RecordID()
        try EventFile.create(path: path, identity: identity)
        let file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...3))
        try file.append(Self.events(4...10))
        #expect(try records(file).map(\.seq) == Array(1...10))
        let reopened = try EventFile(path: path, logger: quietLogger("log"))
        #expect(reopened.identity == identity && reopened.lastSeq == 10)
        let read = try records(reopened, after: 6)
        #expect(read.map(\.seq) == [7, 8, 9, 10])
        #expect(read.map(\.topic) == Self.events(7...10).map(\.topic) && read.map(\.envelope) == Self.events(7...10).map(\.envelope))
        // `through` and stopping early.
        var seen: [Int64] = []
        try reopened.forEach(after: 2, through: 8) { seq, _, _ in
            seen.append(seq)
            return seq < 5
        }
        #expect(seen == [3, 4, 5])
    }

    /// Reads go in pieces of 64 KB and more: records that straddle one piece and the next read whole.
    @Test func recordsAcrossManyReadsReadBackInOrder() throws {
        try EventFile.create(path: path, identity: RecordID())
        let file = try EventFile(path: path, logger: quietLogger("log"))
        for first in stride(from: Int64(1), through: 5000, by: 500) { try file.append(Self.events(first...first + 499, envelopeBytes: Int(first % 97))) }
        let reopened = try EventFile(path: path, logger: quietLogger("log"))
        #expect(reopened.lastSeq == 5000 && !reopened.openedFromIndex)
        #expect(try records(reopened).map(\.seq) == Array(1...5000))
        #expect(try records(reopened, after: 4321).map(\.envelope) == Self.events(4322...4500, envelopeBytes: 4001 % 97).map(\.envelope)
                + Self.events(4501...5000, envelopeBytes: 4501 % 97).map(\.envelope))
    }

    @Test func aRecordLargerThanAReadIsReadWhole() throws {
        try EventFile.create(path: path, identity: RecordID())
        let file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...2) + Self.events(3...3, envelopeBytes: 3 << 20) + Self.events(4...5))
        let read = try records(try EventFile(path: path, logger: quietLogger("log")))
        #expect(read.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(read[2].envelope.count > 3 << 20)
    }

    /// Only every 64th record's offset is kept: a read from any seq, to any seq, and a commit cut off
    /// in the middle of a group read exactly those records, as opened from the index and from the file.
    @Test func readsFromAnySeqScanForwardFromTheNearestOffsetKept() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        var seq: Int64 = 0
        for size in [1, 63, 1, 64, 65, 7, 200] {
            try file.append(Self.events(seq + 1...seq + Int64(size), envelopeBytes: Int(seq % 300)))
            seq += Int64(size)
        }
        func expectReads(_ file: EventFile) throws {
            for from in [0, 1, 62, 63, 64, 65, 127, 128, 129, 200, 300, seq - 1, seq] as [Int64] {
                #expect(try records(file, after: from).map(\.seq) == Array(stride(from: from + 1, through: seq, by: 1)), "after \(from)")
                var through: [Int64] = []
                try file.forEach(after: from, through: from + 70) { seq, _, _ in through.append(seq); return true }
                #expect(through == Array(stride(from: from + 1, through: min(from + 70, seq), by: 1)), "after \(from) through +70")
            }
        }
        try expectReads(file)
        file.truncate(after: 130)
        seq = 130
        #expect(file.lastSeq == 130)
        try file.append(Self.events(131...140, envelopeBytes: 3))
        seq = 140
        try expectReads(file)
        try file.saveIndex()
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(file.openedFromIndex && file.lastSeq == seq)
        try expectReads(file)
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(!file.openedFromIndex && file.lastSeq == seq)
        try expectReads(file)
    }

    /// What a machine that stopped mid-write leaves: the end of the last record still the zeros
    /// written ahead of it, a file cut short inside a record (one that an older build grew record by
    /// record), or bytes that fail its check. They were never synced, so never acknowledged: cut
    /// off, and the log goes on.
    @Test func anIncompleteTailIsCutOffAndTheLogGoesOn() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...4))
        let whole = file.end
        try file.append(Self.events(5...5))
        try overwrite(at: file.end - 7, with: Data(count: 7))
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try file.lastSeq == 4 && file.end == whole && size() == whole)
        try file.append(Self.events(5...6))
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try records(file).map(\.seq) == [1, 2, 3, 4, 5, 6])

        #expect(truncate(path, off_t(file.end - 7)) == 0)
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try file.lastSeq == 5 && size() == file.end)

        // A flipped byte in the newest record's envelope fails its check.
        try overwrite(at: file.end - 3, with: Data("?".utf8))
        #expect(try EventFile(path: path, logger: quietLogger("log")).lastSeq == 4)
    }

    func overwrite(at offset: Int, with bytes: Data) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: bytes)
        try handle.close()
    }

    /// Zeros are written ahead of the records (decision 0002), so an append lands on blocks
    /// the file has: it keeps its size until fewer than half of them are left. A start after a crash
    /// keeps them as they are, and so does one after a clean stop.
    @Test func theZerosAheadOfTheRecordsAreKeptAndNotATornTail() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...2))
        let zeroed = try size()
        #expect(zeroed == file.fileEnd && zeroed >= file.end + EventFile.zeroedAhead && zeroed % 4096 == 0)
        try file.append(Self.events(3...40))
        #expect(try size() == zeroed)
        let tail = try Data(contentsOf: URL(fileURLWithPath: path)).dropFirst(file.end)
        #expect(tail.count == zeroed - file.end && tail.allSatisfy { $0 == 0 })

        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try !file.openedFromIndex && file.lastSeq == 40 && file.fileEnd == zeroed && size() == zeroed)
        try file.saveIndex()
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(file.openedFromIndex && file.lastSeq == 40 && file.fileEnd == zeroed)

        // A record larger than what is left writes zeros ahead of itself again.
        try file.append(Self.events(41...41, envelopeBytes: 3 << 20))
        #expect(try size() >= file.end + EventFile.zeroedAhead)
        try file.append(Self.events(42...42))
        #expect(try records(try EventFile(path: path, logger: quietLogger("log"))).map(\.seq) == Array(1...42))
    }

    @Test func aCommitThatFailedIsTakenOffTheFile() throws {
        try EventFile.create(path: path, identity: RecordID())
        let file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...2))
        let before = file.end
        try file.append(Self.events(3...5))
        file.truncate(after: 2)
        #expect(try file.lastSeq == 2 && file.end == before && size() == before)
        try file.append(Self.events(3...3))
        #expect(try records(try EventFile(path: path, logger: quietLogger("log"))).map(\.seq) == [1, 2, 3])
    }

    /// A clean stop saves the offsets, and the next start takes them instead of reading the file, once:
    /// an index that no longer matches the file, or of another file, is ignored.
    @Test func aCleanStopsIndexSparesTheNextStartTheRead() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(!file.openedFromIndex)
        try file.append(Self.events(1...6))
        try file.saveIndex()
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(file.openedFromIndex && file.lastSeq == 6)
        #expect(try records(file, after: 3).map(\.seq) == [4, 5, 6])
        #expect(!FileManager.default.fileExists(atPath: path + ".index"), "good for one start only")
        try file.append(Self.events(7...7))
        #expect(try records(try EventFile(path: path, logger: quietLogger("log"))).map(\.seq) == Array(1...7))

        // Saved, then records were appended (by a start that crashed, the index's unlink not yet on
        // disk), into the zeros ahead: the file kept its size, and the index is stale all the same.
        file = try EventFile(path: path, logger: quietLogger("log"))
        try file.saveIndex()
        let sizeSaved = try size()
        try file.append(Self.events(8...9))
        #expect(try size() == sizeSaved)
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(!file.openedFromIndex && file.lastSeq == 9)

        // Another log's index.
        try file.saveIndex()
        let other = directory.appendingPathComponent("other.events").path
        try EventFile.create(path: other, identity: RecordID())
        try FileManager.default.moveItem(atPath: path + ".index", toPath: other + ".index")
        let opened = try EventFile(path: other, logger: quietLogger("log"))
        #expect(!opened.openedFromIndex && opened.lastSeq == 0)
    }

    @Test func anotherFileIsRefusedByName() throws {
        try Data("SQLite format 3\0 and more bytes than a header holds, so it is read whole".utf8).write(to: URL(fileURLWithPath: path))
        #expect { try EventFile(path: path, logger: quietLogger("log")) } throws: { "\($0)".contains(path) && "\($0)".contains("LHTLOG1") }
    }

    @Test func theFileIsPrivate() throws {
        try EventFile.create(path: path, identity: RecordID())
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
