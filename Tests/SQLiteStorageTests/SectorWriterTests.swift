import Foundation
import GRDB
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// `SectorWriter`: new bytes written around the page cache, a sector at a time (docs/decisions/0002-zeroed-tail-and-o-direct-sectors.md).
@Suite struct SectorWriterTests {
    let path = temporaryDirectory("lht-sectors").appendingPathComponent("log").path

    /// Bytes this thread has had written to storage so far (`/proc/thread-self/io`): other tests run
    /// on other threads meanwhile.
    static func bytesWrittenByThisThread() throws -> Int {
        let io = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
        return io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") }.flatMap { Int($0.split(separator: " ").last!) } ?? -1
    }

    /// Pieces of any length, one after the other, read back as written, with zeros after the last;
    /// cut short in between, the next write takes the file's own last sector.
    @Test func piecesOfAnyLengthReadBackAsWritten() throws {
        try DataDirectory.createPrivateFile(path)
        let file = open(path, O_RDWR | O_CLOEXEC)
        defer { close(file) }
        let writer = try #require(SectorWriter(path: path), "direct I/O where the tests' files are (ext4 here)")
        var generator = SystemRandomNumberGenerator()
        var expected = Data()
        for round in 0..<300 {
            if round == 150 {
                expected.removeLast(700)  // a commit that failed: `EventFile.truncate`
                #expect(ftruncate(file, off_t(expected.count)) == 0)
            }
            let piece = Data((0..<Int.random(in: 1...1500, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) })
            #expect(try piece.withUnsafeBytes { try writer.write($0, at: expected.count, file: file) })
            expected += piece
        }
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(written.prefix(expected.count) == expected)
        #expect(written.count - expected.count < 512 && written.dropFirst(expected.count).allSatisfy { $0 == 0 })
    }

    /// The point of it: a small record and its sync cost the sectors written, not a 4 KB page.
    @Test func aSmallWriteAndItsSyncCountTheSectorsNotThePage() throws {
        try DataDirectory.createPrivateFile(path)
        let file = open(path, O_RDWR | O_CLOEXEC)
        defer { close(file) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        #expect(pwrite(file, zeros, zeros.count, 0) == zeros.count && fsync(file) == 0)
        let writer = try #require(SectorWriter(path: path))
        let record = [UInt8](repeating: 7, count: 300)
        func bytesPerWrite(_ write: (Int) throws -> Void) throws -> Int {
            let before = try Self.bytesWrittenByThisThread()
            for n in 0..<100 {
                try write(n * record.count)
                #expect(fdatasync(file) == 0)
            }
            return (try Self.bytesWrittenByThisThread() - before) / 100
        }
        let direct = try bytesPerWrite { offset in _ = try record.withUnsafeBytes { try writer.write($0, at: offset, file: file) } }
        let paged = try bytesPerWrite { offset in #expect(pwrite(file, record, record.count, 100 * record.count + offset) == record.count) }
        #expect(direct <= 1024 && paged >= 4096, "direct \(direct) B a write, through the page cache \(paged)")
    }
}
