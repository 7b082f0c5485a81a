import Foundation
import Storage

extension LoggedIDs {
    /// One layer of the filter: its blocks in memory, or in a `FilterFile` from `offset`.
    struct Layer {
        let capacity: Int
        private(set) var count = 0
        private let blocks: UInt64
        private var words: [UInt64]
        private let file: FilterFile?
        private let offset: Int
        /// While a start loads a layer on disk: its blocks, mapped.
        private var mapping: UnsafeMutablePointer<UInt64>?

        init(capacity: Int) {
            self.capacity = capacity
            blocks = Self.blocks(capacity)
            words = Array(repeating: 0, count: Int(blocks) * 8)
            file = nil
            offset = 0
        }

        init(capacity: Int, file: FilterFile) throws {
            self.capacity = capacity
            blocks = Self.blocks(capacity)
            words = []
            self.file = file
            offset = try file.allocate(bytes: Int(blocks) * 64)
        }

        private static func blocks(_ capacity: Int) -> UInt64 { UInt64(max(1, (capacity * LoggedIDs.bitsPerID + 511) / 512)) }

        var residentBytes: Int { words.count * 8 }

        private func firstWord(_ hash: (block: UInt64, bits: UInt64)) -> Int { Int(hash.block.multipliedFullWidth(by: blocks).high) * 8 }

        mutating func insert(_ hash: (block: UInt64, bits: UInt64)) throws {
            let base = firstWord(hash)
            func set(_ words: UnsafeMutablePointer<UInt64>) {
                for word in 0..<8 { words[word] |= 1 << ((hash.bits >> (word * 6)) & 63) }
            }
            if let mapping {
                set(mapping + base)
            } else if let file {
                let block = try file.read(at: offset + base * 8)
                set(block)
                try file.write(at: offset + base * 8)
            } else {
                words.withUnsafeMutableBufferPointer { set($0.baseAddress! + base) }
            }
            count += 1
        }

        func mayContain(_ hash: (block: UInt64, bits: UInt64)) throws -> Bool {
            let base = firstWord(hash)
            func test(_ words: UnsafePointer<UInt64>) -> Bool {
                (0..<8).allSatisfy { word in words[word] & (1 << ((hash.bits >> (word * 6)) & 63)) != 0 }
            }
            if let mapping { return test(mapping + base) }
            if let file { return test(try file.read(at: offset + base * 8)) }
            return words.withUnsafeBufferPointer { test($0.baseAddress! + base) }
        }

        /// Runs `body` with a layer on disk mapped, so that loading it costs no system call an id:
        /// unmapped after, it leaves no memory resident.
        mutating func mapped(_ body: (inout Layer) throws -> Void) throws {
            guard let file else { return try body(&self) }
            let bytes = Int(blocks) * 64
            mapping = try file.map(at: offset, bytes: bytes)
            defer {
                file.unmap(mapping!, bytes: bytes)
                mapping = nil
            }
            try body(&self)
        }
    }
}

/// The file the filter's layers past memory live in: made anew at each start and unlinked at once,
/// so it is the process's alone and goes with it. Nothing waits for its writes to reach the disk.
/// The loop's thread only.
final class FilterFile {
    let path: String
    private let descriptor: Int32
    private var size = 0
    /// One block, read and written back.
    private let block = UnsafeMutablePointer<UInt64>.allocate(capacity: 8)
    private static let page = 4096

    init(path: String) throws {
        self.path = path
        unlink(path)
        descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StorageError.system(path, "creating the id filter's file", errno: errno) }
        unlink(path)
    }

    deinit {
        close(descriptor)
        block.deallocate()
    }

    /// Room for a layer of `bytes`, zeros (a hole until written), page-aligned so it can be mapped.
    func allocate(bytes: Int) throws -> Int {
        let offset = size
        let next = (size + bytes + Self.page - 1) / Self.page * Self.page
        guard ftruncate(descriptor, off_t(next)) == 0 else { throw StorageError.system(path, "growing the id filter's file", errno: errno) }
        size = next
        return offset
    }

    /// The block at `offset`, valid until the next call.
    func read(at offset: Int) throws -> UnsafeMutablePointer<UInt64> {
        guard pread(descriptor, block, 64, off_t(offset)) == 64 else {
            throw StorageError.system(path, "reading the id filter", errno: errno)
        }
        return block
    }

    /// Writes the block `read` returned back to `offset`.
    func write(at offset: Int) throws {
        guard pwrite(descriptor, block, 64, off_t(offset)) == 64 else {
            throw StorageError.system(path, "writing the id filter", errno: errno)
        }
    }

    /// The layer's blocks given their room first: a full disk fails here, not as a fault in a write to the mapping.
    func map(at offset: Int, bytes: Int) throws -> UnsafeMutablePointer<UInt64> {
        let reserved = posix_fallocate(descriptor, off_t(offset), off_t(bytes))
        guard reserved == 0 else { throw StorageError.system(path, "making room for the id filter", errno: reserved) }
        guard let address = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, off_t(offset)), address != MAP_FAILED else {
            throw StorageError.system(path, "mapping the id filter", errno: errno)
        }
        return address.assumingMemoryBound(to: UInt64.self)
    }

    func unmap(_ words: UnsafeMutablePointer<UInt64>, bytes: Int) { munmap(words, bytes) }
}
