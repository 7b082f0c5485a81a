import CCRC32C

/// CRC-32C (Castagnoli), as iSCSI and ext4 use it: the check on each record of an `EventFile`.
/// By the processor's crc32 instruction where it has one (`CCRC32C`), else slicing by 8: a start
/// after a `kill -9` checks every record (docs/decisions/0011-crc32c-by-instruction.md).
enum CRC32C {
    static let hardware = lht_crc32c_hardware() != 0

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard hardware, let base = bytes.baseAddress else { return tableChecksum(bytes) }
        return ~lht_crc32c_update(0xFFFF_FFFF, base, bytes.count)
    }

    private static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][byte] = crc
        }
        for byte in 0..<256 {
            for slice in 1..<8 { tables[slice][byte] = (tables[slice - 1][byte] >> 8) ^ tables[0][Int(tables[slice - 1][byte] & 0xFF)] }
        }
        return tables
    }()
    private static let flat: [UInt32] = tables.flatMap { $0 }

    /// Without the instruction; the tests hold the two to each other.
    static func tableChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        flat.withUnsafeBufferPointer { table in
            var crc: UInt32 = 0xFFFF_FFFF
            var index = 0
            let count = bytes.count
            while index + 8 <= count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)) ^ UInt64(crc)
                crc = table[7 * 256 + Int(word & 0xFF)] ^ table[6 * 256 + Int((word >> 8) & 0xFF)]
                    ^ table[5 * 256 + Int((word >> 16) & 0xFF)] ^ table[4 * 256 + Int((word >> 24) & 0xFF)]
                    ^ table[3 * 256 + Int((word >> 32) & 0xFF)] ^ table[2 * 256 + Int((word >> 40) & 0xFF)]
                    ^ table[1 * 256 + Int((word >> 48) & 0xFF)] ^ table[Int(word >> 56)]
                index += 8
            }
            while index < count {
                crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
            return ~crc
        }
    }
}
