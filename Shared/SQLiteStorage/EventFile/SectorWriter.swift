import Foundation
import Storage

/// Writes an append-only file's new bytes around the page cache (`O_DIRECT`), in whole 512-byte
/// sectors (docs/decisions/0002-zeroed-tail-and-o-direct-sectors.md).
///
/// Written through the page cache, every sync writes back the whole page the new bytes fell in, and
/// the kernel counts each page dirtied again as a whole page written, for records far smaller. A
/// direct write sends the sectors the bytes touch, the last one padded with zeros: the zeros the
/// file holds after its end anyway (`EventFile.zeroAhead`). The sector the write starts in is
/// rewritten whole, from the bytes of it kept since the last write. The data is with the device
/// once `write` returns, so a `kill -9` keeps it as it keeps the page cache; a sync of the file (by
/// any descriptor) flushes the device's cache, and makes it durable.
///
/// On a platform or file system without direct I/O (`init` returns nil), or one that refuses the
/// alignment, the caller writes through the page cache as before.
final class SectorWriter {
    private static let memoryAlignment = 4096
    private let path: String
    private let descriptor: Int32
    /// 512 bytes, or the 4 KB a device with larger sectors asks for.
    private var sector = 512
    private var buffer: UnsafeMutableRawBufferPointer
    /// Where the last write ended, and the bytes from the start of its sector up to there (reset to
    /// -1 when the sector size changes, so they are read again).
    private var knownEnd = -1
    private var lastSector: [UInt8] = []

    init?(path: String) {
        guard let direct = Self.directFlag else { return nil }
        self.path = path
        descriptor = open(path, O_WRONLY | O_CLOEXEC | direct)
        guard descriptor >= 0 else { return nil }
        buffer = .allocate(byteCount: 64 << 10, alignment: Self.memoryAlignment)
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
    }

    /// `O_DIRECT`, which Glibc's Swift module leaves out (it is a GNU extension there).
    private static var directFlag: Int32? {
        #if os(Linux) && arch(x86_64)
        return 0o40000
        #elseif os(Linux) && arch(arm64)
        return 0o200000
        #else
        return nil
        #endif
    }

    /// Writes `bytes` at `offset`, the file's end so far, whose bytes before it `file` reads back
    /// when they are not the last write's (the first write, or after the file was cut). False: the
    /// file system refused direct writes, and nothing was written; the caller should write through
    /// the page cache from now on.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int, file: Int32) throws -> Bool {
        while true {
            let start = offset / sector * sector
            if knownEnd != offset {
                lastSector = [UInt8](repeating: 0, count: offset - start)
                guard lastSector.isEmpty || pread(file, &lastSector, lastSector.count, start) == lastSector.count else {
                    throw StorageError.system(path, "reading the event log's last sector", errno: errno)
                }
            }
            let length = (offset + bytes.count + sector - 1) / sector * sector - start
            if buffer.count < length {
                buffer.deallocate()
                buffer = .allocate(byteCount: length, alignment: Self.memoryAlignment)
            }
            lastSector.withUnsafeBytes { buffer.copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: buffer[lastSector.count...]).copyMemory(from: bytes)
            let used = lastSector.count + bytes.count
            (buffer.baseAddress! + used).initializeMemory(as: UInt8.self, repeating: 0, count: length - used)
            var written = 0
            while written < length {
                let result = pwrite(descriptor, buffer.baseAddress! + written, length - written, start + written)
                let code = errno
                if result < 0 && code == EINTR { continue }
                if result < 0 && code == EINVAL && written == 0 {
                    // Misaligned for this device: once more with 4 KB, then not at all.
                    guard sector < Self.memoryAlignment else { return false }
                    sector = Self.memoryAlignment
                    knownEnd = -1
                    break
                }
                guard result > 0, result % sector == 0 else {
                    throw StorageError.system(path, "writing the event log", errno: result < 0 ? code : ENOSPC)
                }
                written += result
            }
            guard written == length else { continue }
            let newEnd = offset + bytes.count
            knownEnd = newEnd
            let kept = newEnd - newEnd / sector * sector
            lastSector = Array(UnsafeRawBufferPointer(rebasing: buffer[(newEnd - kept - start)..<(newEnd - start)]))
            return true
        }
    }
}
