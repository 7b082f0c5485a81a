import LHTSchema
import Storage

/// Which session and NoAlc entry ids may have been logged: how a repeated id is told where the
/// write transaction has no tables (`Transaction.hasTables`: the embedded store, whose tables are
/// applied behind the log). A Bloom filter: "no" is certain, so a new id, the usual case, costs no
/// lookup; "maybe" (a repeated id, or a new id about once in 10,000 per full layer) is looked up in
/// the transaction's events and the table (`SessionStore.firstReceipt`), which waits for the
/// projection. 3 bytes an id, where a table of the ids themselves took 32–64.
///
/// Split-block (as Parquet's): an id sets one bit in each of the 8 words of one 64-byte block, so a
/// lookup reads one cache line. The filter grows by layers, each twice the last, as ids are added; a
/// start sizes one layer for what the tables hold. An id rolled back stays in: a lookup then finds
/// nothing, as for any false "maybe".
///
/// Memory is bounded however many ids are logged: layers are kept in memory up to `memoryIDs` ids
/// in all, and every layer after them lives in a file (`FilterFile`), where a lookup reads one block
/// and an insert writes one back. The file is scratch, made again from the tables at each start.
final class LoggedIDs {
    static let bitsPerID = 24
    static let smallestLayer = 1 << 16
    /// Ids the layers in memory may hold together (3 bytes each); later layers are on disk.
    static let memoryIDs = 1 << 18

    private var layers: [Layer]
    private let file: FilterFile?

    /// Room for `expected` ids before the filter grows. With none expected, the first layer waits
    /// for the first id: where the tables tell repeats (PostgreSQL), the filter stays empty.
    /// `file`: where layers past `memoryIDs` go; nil keeps them all in memory.
    init(expected: Int = 0, file: FilterFile? = nil) throws {
        self.file = file
        layers = []
        if expected > 0 { layers = [try newLayer(capacity: max(Self.smallestLayer, expected * 2))] }
    }

    /// Every id the tables hold. A layer on disk is written through a mapping of the file meanwhile.
    convenience init(_ sql: StoreConnection, file: FilterFile?) throws {
        // Rows are never deleted, so the largest rowid is about their count, and costs no scan.
        let count = try ["session", "noalc_entry"].reduce(0) { total, table in
            total + Int(try sql.first("SELECT MAX(rowid) FROM \(table)", []) { $0.integer(0) } ?? 0)
        }
        try self.init(expected: count, file: file)
        guard !layers.isEmpty else { return }
        try layers[0].mapped { layer in
            for table in ["session", "noalc_entry"] {
                // The ids alone: read from their index, parsed in place.
                try sql.forEachRow("SELECT id FROM \(table)", []) { row in
                    if let id = row.withBytes(0, { RecordID(utf8: $0) }) ?? nil { try layer.insert(Self.hash(id)) }
                }
            }
        }
    }

    var count: Int { layers.reduce(0) { $0 + $1.count } }

    /// Bytes of filter held in memory.
    var residentBytes: Int { layers.reduce(0) { $0 + $1.residentBytes } }

    func insert(_ id: RecordID) throws {
        if layers.last.map({ $0.count >= $0.capacity }) ?? true {
            layers.append(try newLayer(capacity: layers.last.map { $0.capacity * 2 } ?? Self.smallestLayer))
        }
        try layers[layers.count - 1].insert(Self.hash(id))
    }

    /// False: `id` was never inserted. True: it may have been.
    func mayContain(_ id: RecordID) throws -> Bool {
        let hash = Self.hash(id)
        return try layers.contains { try $0.mayContain(hash) }
    }

    /// In memory while the layers there leave room for it, else in the file.
    private func newLayer(capacity: Int) throws -> Layer {
        let inMemory = layers.filter { $0.residentBytes > 0 }.reduce(0) { $0 + $1.capacity }
        guard let file, inMemory + capacity > Self.memoryIDs else { return Layer(capacity: capacity) }
        return try Layer(capacity: capacity, file: file)
    }

    /// Two independent 64-bit hashes of the id's 128 bits (a version 7 id's first 48 are its time, so
    /// both halves are mixed in): which block, and which bit in each of its words.
    static func hash(_ id: RecordID) -> (block: UInt64, bits: UInt64) {
        let (high, low) = withUnsafeBytes(of: id.uuid.uuid) {
            ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        let block = mix(high ^ mix(low))
        return (block, mix(block ^ 0x9E37_79B9_7F4A_7C15))
    }

    /// SplitMix64's finalizer: every input bit moves about half the output bits.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
