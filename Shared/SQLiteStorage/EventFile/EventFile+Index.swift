import Foundation
import Storage

/// The index a clean stop leaves beside the event file (`<file>.index`), so the next start need not
/// read the whole file.
extension EventFile {
    /// `<file>.index`: the offsets a clean stop saved, for the next start only.
    private var indexPath: String { path + ".index" }

    /// For a clean stop: syncs the file, then saves the offsets kept beside it (synced, under a
    /// temporary name renamed into place), so the next start need not read the file. Header: magic,
    /// identity, then the records' count, the file's end and the offsets' CRC-32C (8, 8, 4 bytes).
    func saveIndex() throws {
        guard fdatasync(descriptor) == 0 else { throw StorageError("\(path): \(String(cString: strerror(errno)))") }
        var bytes = Self.indexMagic + Array(identity.description.utf8)
        let offsetBytes = sparse.map { Int64($0).littleEndian }.withUnsafeBytes { Array($0) }
        withUnsafeBytes(of: lastSeq.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Int64(end).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: offsetBytes.withUnsafeBytes { CRC32C.checksum($0) }.littleEndian) { bytes += $0 }
        bytes += [UInt8](repeating: 0, count: Self.headerSize - bytes.count) + offsetBytes
        try Self.writeWhole(indexPath) { file, temporary in try bytes.withUnsafeBytes { try Self.writeFully(file, $0, at: 0, path: temporary) } }
    }

    /// What a clean stop saved: the offsets kept, the records' count, where they end, the file's size.
    struct SavedIndex {
        let sparse: [Int]
        let count: Int64
        let end: Int
        let fileEnd: Int
    }

    /// Takes the offsets from the index a clean stop saved, if it is this file's as it is now (only
    /// zeros after its end: an index that came back after a start appended, unlinked but not yet
    /// synced when the machine stopped, is stale), and removes it: after this start the file
    /// changes, and the index would no longer describe it.
    func takeSavedIndex() -> SavedIndex? {
        guard let index = FileManager.default.contents(atPath: indexPath) else { return nil }
        unlink(indexPath)
        var size = stat()
        guard fstat(descriptor, &size) == 0, index.count >= Self.headerSize,
              Array(index.prefix(Self.indexMagic.count)) == Self.indexMagic,
              String(decoding: index[Self.indexMagic.count..<Self.indexMagic.count + 36], as: UTF8.self) == identity.description else { return nil }
        return index.withUnsafeBytes { bytes in
            let count = Int(Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 44, as: Int64.self)))
            let indexEnd = Int(Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: 52, as: Int64.self)))
            let crc = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 60, as: UInt32.self))
            let offsetBytes = UnsafeRawBufferPointer(rebasing: bytes[Self.headerSize...])
            let kept = (count + Self.sparseEvery - 1) / Self.sparseEvery
            guard count >= 0, offsetBytes.count == kept * 8, indexEnd >= Self.headerSize, indexEnd <= Int(size.st_size),
                  CRC32C.checksum(offsetBytes) == crc, isZero(from: indexEnd, to: Int(size.st_size)) else { return nil }
            return SavedIndex(sparse: (0..<kept).map { Int(Int64(littleEndian: offsetBytes.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self))) },
                              count: Int64(count), end: indexEnd, fileEnd: Int(size.st_size))
        }
    }
}
