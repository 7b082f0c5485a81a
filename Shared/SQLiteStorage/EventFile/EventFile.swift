import Foundation
import LHTSchema
import Logging
import Storage

/// A service's log as one append-only file (`<service>.events`), for a service whose log is its only
/// durable state (`SQLiteLayout.logOnly`): each event is written once, as it was published, and the
/// file is synced before anything that depends on it leaves (`CommitSync`). No pages, no b-tree, no
/// checkpoint (docs/decisions/0001-event-file-log.md).
///
/// Layout: a 64-byte header (`LHTLOG1\n`, the log's identity, zeros), then one record per event:
/// payload length and CRC-32C of the payload (4 bytes each, little-endian), then the payload:
/// seq (8 bytes), topic length (2), topic, envelope. Seqs start at 1 and have no gaps.
///
/// The offset of every 64th record is kept in memory (`sparse`), and a read scans forward from the
/// nearest one: memory an eighth of a byte a record, where an offset for each took 8. A clean stop
/// saves them beside the file (`saveIndex`), and the next start takes them from there. Any other start reads the whole file and
/// checks every record: records from the first that is cut short or fails its check on are the tail
/// of a write that never completed (the machine stopped before its sync, so nothing in it was
/// acknowledged), and they are cut off, as SQLite drops WAL frames after the first bad checksum.
///
/// After the records the file holds zeros, written ahead of them a megabyte at a time
/// (docs/decisions/0002-zeroed-tail-and-o-direct-sectors.md): an append then lands on blocks the file already has, so its sync writes the
/// data alone, where an append that grows the file also commits ext4's journal (its size, its new
/// blocks). A read stops at the zeros as at a cut-off record: length 0. A commit's records that
/// fill less than a page are written around the page cache where the file system allows
/// (`SectorWriter`), so its sync writes their sectors, not the page; reads go through the cache.
///
/// The loop appends and reads; the commit-sync thread only syncs, which touches no other state.
final class EventFile: SyncedFile, @unchecked Sendable {
    static let magic = Array("LHTLOG1\n".utf8)
    /// Version 2 keeps every 64th offset; a version 1 index (every offset) is not read, and the file is.
    static let indexMagic = Array("LHTIDX2\n".utf8)
    /// One record's offset in this many is kept (`sparse`).
    static let sparseEvery = 64
    static let headerSize = 64
    /// Seq, topic length.
    static let payloadFixed = 10
    static let recordHeader = 8
    /// Larger than any record a request can make (`EnvelopeCompression.largestEnvelope`).
    static let largestRecord = 16 << 20
    /// How far zeros are written ahead of the records; more are written once fewer than half are left.
    static let zeroedAhead = 1 << 20
    private static let page = 4096
    private static let zeroPage = [UInt8](repeating: 0, count: page)

    let path: String
    let identity: RecordID
    let descriptor: Int32
    /// Writes the records, where direct I/O is to be had; nil: through `descriptor`.
    private var sectors: SectorWriter?
    /// The offset of record `k × sparseEvery + 1`, by k.
    private(set) var sparse: [Int] = []
    /// Where the next record goes.
    private(set) var end: Int
    /// The file's size: zeros from `end` to here.
    private(set) var fileEnd: Int

    /// The newest seq in the file.
    private(set) var lastSeq: Int64 = 0
    /// Whether this start took the offsets from a clean stop's index, or read the whole file.
    private(set) var openedFromIndex = false

    /// Opens the file at `path`, which must exist (`create`).
    init(path: String, logger: Logger) throws {
        self.path = path
        descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw StorageError("\(path): cannot open the event log: \(String(cString: strerror(errno)))") }
        do {
            var header = [UInt8](repeating: 0, count: Self.headerSize)
            guard pread(descriptor, &header, header.count, 0) == header.count, Array(header.prefix(Self.magic.count)) == Self.magic,
                  let identity = String(bytes: header[Self.magic.count..<Self.magic.count + 36], encoding: .utf8).flatMap(RecordID.init) else {
                throw StorageError("\(path) is not an event log of this service (its header is not LHTLOG1)")
            }
            self.identity = identity
            end = Self.headerSize
            fileEnd = end
            let started = Date()
            if let saved = takeSavedIndex() {
                (sparse, lastSeq, end, fileEnd) = (saved.sparse, saved.count, saved.end, saved.fileEnd)
                openedFromIndex = true
            } else {
                try recover(logger)
            }
            sectors = SectorWriter(path: path)
            logger.info(openedFromIndex ? "event log opened from the index its last stop saved" : "event log read and checked", metadata: [
                "file": "\(path)", "events": "\(lastSeq)", "seconds": "\(String(format: "%.3f", Date().timeIntervalSince(started)))"])
        } catch {
            close(descriptor)
            throw error
        }
    }

    deinit { close(descriptor) }

    /// Makes the file with `identity` and `records` (seq order, from 1), synced, under a temporary
    /// name renamed into place: a machine that stops meanwhile leaves no file, or the whole one.
    static func create(path: String, identity: RecordID, records: ((_ write: ([PendingEvent]) throws -> Void) throws -> Void)? = nil) throws {
        try writeWhole(path) { descriptor, temporary in
            var header = magic + Array(identity.description.utf8)
            header += [UInt8](repeating: 0, count: headerSize - header.count)
            var offset = 0
            func write(_ bytes: [UInt8]) throws {
                try bytes.withUnsafeBytes { try writeFully(descriptor, $0, at: offset, path: temporary) }
                offset += bytes.count
            }
            try write(header)
            try records? { events in try write(encode(events)) }
        }
    }

    /// Writes `events` after the last record, to the kernel: a `kill -9` from here on keeps them, a
    /// machine that stops keeps them once `sync` ran. Their seqs must follow `lastSeq`.
    func append(_ events: [PendingEvent]) throws {
        guard let first = events.first else { return }
        precondition(first.seq == lastSeq + 1, "event \(first.seq) appended after \(lastSeq)")
        let bytes = Self.encode(events)
        if end + bytes.count > fileEnd - Self.zeroedAhead / 2 { zeroAhead(to: end + bytes.count + Self.zeroedAhead) }
        do {
            // A direct write holds the loop for the device's round trip, which records of a page or
            // more do not earn back: through the page cache they waste less than the page they end in.
            try bytes.withUnsafeBytes { bytes in
                if bytes.count < Self.page, let sectors {
                    if try sectors.write(bytes, at: end, file: descriptor) { return }
                    self.sectors = nil
                }
                try Self.writeFully(descriptor, bytes, at: end, path: path)
            }
        } catch {
            cutOff(at: end)
            throw error
        }
        var offset = end
        for event in events {
            noteRecord(at: offset)
            offset += Self.recordHeader + Self.payloadFixed + event.topic.utf8.count + event.envelope.count
        }
        end = offset
        fileEnd = max(fileEnd, end)
    }

    /// Counts the record that starts at `offset`, the next seq's.
    private func noteRecord(at offset: Int) {
        if lastSeq % Int64(Self.sparseEvery) == 0 { sparse.append(offset) }
        lastSeq += 1
    }

    /// Where the record after `seq` starts (`end` after the last): scanned forward from the nearest
    /// offset kept, at most `sparseEvery - 1` records.
    private func offset(after seq: Int64) throws -> Int {
        guard seq < lastSeq else { return end }
        let kept = Int(seq) / Self.sparseEvery
        var found = sparse[kept]
        guard Int64(kept * Self.sparseEvery) < seq else { return found }
        try read(from: found, to: end) { payload, offset in
            guard Int64(littleEndian: payload.loadUnaligned(as: Int64.self)) == seq + 1 else { return true }
            found = offset
            return false
        }
        return found
    }

    /// Cuts the records after `seq` off again: their transaction did not commit.
    func truncate(after seq: Int64) {
        guard seq < lastSeq, let offset = try? offset(after: seq) else { return }
        end = offset
        lastSeq = seq
        sparse.removeSubrange(((Int(seq) + Self.sparseEvery - 1) / Self.sparseEvery)...)
        cutOff(at: end)
    }

    /// Ends the file at `offset`, zeros and all, so that everything after `end` stays zero.
    private func cutOff(at offset: Int) {
        if ftruncate(descriptor, offset) == 0 { fileEnd = offset }
    }

    /// Writes zeros from the file's end to the page at or after `target`, a page per write: the kernel
    /// caches a larger write as one large folio, and each append into it would count, and write back,
    /// the whole folio. The next sync makes them durable with the records written meanwhile. Best
    /// effort: a disk too full for them still takes the records themselves.
    private func zeroAhead(to target: Int) {
        let target = (target + Self.page - 1) / Self.page * Self.page
        while fileEnd < target {
            let next = (fileEnd / Self.page + 1) * Self.page
            guard (try? Self.zeroPage.withUnsafeBytes({ try Self.writeFully(descriptor, UnsafeRawBufferPointer(rebasing: $0[..<(next - fileEnd)]),
                                                                               at: fileEnd, path: path) })) != nil else { return }
            fileEnd = next
        }
    }

    /// nil once every record written so far is on disk, else what failed.
    func sync() -> String? { fdatasync(descriptor) == 0 ? nil : "fdatasync: \(String(cString: strerror(errno)))" }

    /// Calls `body` with each record after `seq` through `through`, in order, until it returns false.
    /// The buffers are valid only inside `body`.
    func forEach(after seq: Int64, through last: Int64,
                 _ body: (_ seq: Int64, _ topic: UnsafeRawBufferPointer, _ envelope: UnsafeRawBufferPointer) throws -> Bool) throws {
        let last = min(last, lastSeq)
        guard seq < last else { return }
        try read(from: try offset(after: max(seq, 0)), to: try offset(after: last)) { record, _ in
            let topicLength = Int(UInt16(littleEndian: record.loadUnaligned(fromByteOffset: 8, as: UInt16.self)))
            let topic = UnsafeRawBufferPointer(rebasing: record[Self.payloadFixed..<Self.payloadFixed + topicLength])
            let envelope = UnsafeRawBufferPointer(rebasing: record[(Self.payloadFixed + topicLength)...])
            return try body(Int64(littleEndian: record.loadUnaligned(as: Int64.self)), topic, envelope)
        }
    }

    /// Reads every record, checking each, and cuts off an incomplete tail (see the type's comment);
    /// zeros alone after the last record are the tail written ahead, and stay.
    private func recover(_ logger: Logger) throws {
        var size = stat()
        guard fstat(descriptor, &size) == 0 else { throw StorageError("\(path): \(String(cString: strerror(errno)))") }
        fileEnd = Int(size.st_size)
        let validEnd = try read(from: Self.headerSize, to: fileEnd, checked: true) { payload, offset in
            guard Int64(littleEndian: payload.loadUnaligned(as: Int64.self)) == lastSeq + 1 else { return false }
            noteRecord(at: offset)
            return true
        }
        end = validEnd
        if validEnd < fileEnd, !isZero(from: validEnd, to: fileEnd) {
            logger.warning("the event log ends in a record that was never completed (the machine stopped before it was synced): cut off", metadata: [
                "file": "\(path)", "lastSeq": "\(lastSeq)", "bytesCutOff": "\(fileEnd - validEnd)"])
            guard ftruncate(descriptor, validEnd) == 0, fsync(descriptor) == 0 else {
                throw StorageError("\(path): cutting off the incomplete tail: \(String(cString: strerror(errno)))")
            }
            fileEnd = validEnd
        }
    }

    /// Whether the file holds only zeros from `start` to `stop`. The pages read are dropped again:
    /// read ahead, the kernel may cache them as large folios, which appends should not land in
    /// (`zeroAhead`).
    func isZero(from start: Int, to stop: Int) -> Bool {
        defer { _ = posix_fadvise(descriptor, off_t(start), off_t(stop - start), POSIX_FADV_DONTNEED) }
        var buffer = [UInt8](repeating: 0, count: min(max(stop - start, 0), 64 << 10))
        var offset = start
        while offset < stop {
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, min($0.count, stop - offset), offset) }
            guard got > 0, buffer[..<got].allSatisfy({ $0 == 0 }) else { return false }
            offset += got
        }
        return true
    }
}

extension EventFile: RecordFile {}
