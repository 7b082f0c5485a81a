import Foundation
import Glibc

/// A user's id: 1–64 of `A-Z a-z 0-9 _ -`. No dots, so a topic prefix `notify.u1.` never matches `u10`.
public struct UserID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init?(_ text: String) {
        let bytes = text.utf8
        guard (1...64).contains(bytes.count), bytes.allSatisfy(UserID.allowed) else { return nil }
        rawValue = text
    }

    private static func allowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }

    public var description: String { rawValue }
    public static func < (lhs: UserID, rhs: UserID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A UUID id: accepted in either case, compared case-insensitively, emitted in lower case.
public struct RecordID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// A new time-ordered id (version 7, RFC 9562): the Unix time in milliseconds, then 74 random
    /// bits. Ids made later sort later, so a table's index of them grows at its end instead of
    /// dirtying a random page per record (decision [0005](../../docs/decisions/0005-version-7-record-ids.md)). The random bits come from
    /// the kernel in blocks (`IDGenerator`): Foundation's `UUID()` on Linux opens /dev/urandom for
    /// every id.
    public init() { uuid = IDGenerator.shared.next(milliseconds: UInt64(max(0, Date().timeIntervalSince1970 * 1000))) }

    /// Strictly 8-4-4-4-12 hex digits, either case. Parsed here rather than by `UUID(uuidString:)`,
    /// which on Linux skips white space inside the groups and is slow (sscanf).
    public init?(_ text: String) {
        // Through the contiguous bytes: iterating a String's UTF-8 view costs far more.
        var text = text
        guard let id = text.withUTF8({ RecordID(utf8: $0) }) else { return nil }
        self = id
    }

    /// The same from UTF-8 bytes (a column read in place). Inlinable, so each caller gets it
    /// specialized for its collection; contiguous bytes (all callers' case) take `parse`.
    @inlinable
    public init?(utf8 text: some Collection<UInt8>) {
        guard let id = text.withContiguousStorageIfAvailable(RecordID.parse) ?? Array(text).withUnsafeBufferPointer(RecordID.parse) else {
            return nil
        }
        self = id
    }

    /// 8-4-4-4-12 hex digits at fixed offsets, each looked up in a table: loading a million
    /// reminders parses a million ids.
    @usableFromInline
    static func parse(_ text: UnsafeBufferPointer<UInt8>) -> RecordID? {
        guard text.count == 36, let base = text.baseAddress, base[8] == UInt8(ascii: "-"), base[13] == UInt8(ascii: "-"),
              base[18] == UInt8(ascii: "-"), base[23] == UInt8(ascii: "-") else { return nil }
        return hexValues.withUnsafeBufferPointer { values in
            var high: UInt64 = 0, low: UInt64 = 0, flags: UInt8 = 0
            func digits(_ offsets: Range<Int>, into word: inout UInt64) {
                for offset in offsets {
                    let value = values[Int(base[offset])]
                    flags |= value
                    word = word &<< 4 | UInt64(value & 0x0F)
                }
            }
            digits(0..<8, into: &high)
            digits(9..<13, into: &high)
            digits(14..<18, into: &high)
            digits(19..<23, into: &low)
            digits(24..<36, into: &low)
            guard flags & notHex == 0 else { return nil }
            return RecordID(UUID(uuid: withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { $0.load(as: uuid_t.self) }))
        }
    }

    /// Each byte's value as a hex digit of either case, or `notHex`.
    private static let hexValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(byte) - UInt8(ascii: "A") + 10
        default: notHex
        }
    }

    private static let notHex: UInt8 = 0xF0

    /// Lower-case 8-4-4-4-12 hex, written directly: `uuidString.lowercased()` makes two strings per id.
    public var description: String {
        String(unsafeUninitializedCapacity: RecordID.textLength) { write(into: $0) }
    }

    /// The length of `description`.
    public static let textLength = 36

    /// Writes `description`'s bytes into `buffer` (at least `textLength` long) and returns how many.
    /// Eight digits at a time (`hexDigits`), not a table lookup per digit: a `session.log` writes
    /// four ids (decision [0009](../../docs/decisions/0009-hand-written-json-codec.md)).
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(buffer.count >= RecordID.textLength)
        let (high, low) = words
        let out = UnsafeMutableRawPointer(buffer.baseAddress!)
        /// The low half of `word` as eight digits: four at `first`, four at `second`.
        func put(_ word: UInt64, _ first: Int, _ second: Int) {
            // Big-endian in memory: the most significant digit first.
            withUnsafeBytes(of: RecordID.hexDigits(UInt32(truncatingIfNeeded: word)).bigEndian) { digits in
                (out + first).copyMemory(from: digits.baseAddress!, byteCount: 4)
                (out + second).copyMemory(from: digits.baseAddress! + 4, byteCount: 4)
            }
        }
        put(high >> 32, 0, 4)
        put(high, 9, 14)
        put(low >> 32, 19, 24)
        put(low, 28, 32)
        buffer[8] = UInt8(ascii: "-")
        buffer[13] = UInt8(ascii: "-")
        buffer[18] = UInt8(ascii: "-")
        buffer[23] = UInt8(ascii: "-")
        return RecordID.textLength
    }

    /// `value`'s eight lower-case hex digits, one per byte of the word, the most significant digit
    /// in the top byte: each nibble spread to a byte of its own, then '0' added, and 'a' − '0' − 10
    /// more where the nibble is 10 or above (adding 6 carries into the byte's fifth bit exactly then).
    private static func hexDigits(_ value: UInt32) -> UInt64 {
        var nibbles = UInt64(value)
        nibbles = (nibbles | nibbles << 16) & 0x0000_FFFF_0000_FFFF
        nibbles = (nibbles | nibbles << 8) & 0x00FF_00FF_00FF_00FF
        nibbles = (nibbles | nibbles << 4) & 0x0F0F_0F0F_0F0F_0F0F
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
    }

    /// The order of the lower-case text, computed on the bytes: the scheduler's heap compares ids
    /// whenever many reminders share an instant.
    public static func < (lhs: RecordID, rhs: RecordID) -> Bool { lhs.words < rhs.words }

    /// Two words rather than the UUID's sixteen bytes: hashing through `combine(bytes:)` was a fifth
    /// of filling the planner's id-keyed tables at start-up.
    public func hash(into hasher: inout Hasher) {
        let (high, low) = words
        hasher.combine(high)
        hasher.combine(low)
    }

    private var words: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid.uuid) { (UInt64(bigEndian: $0.load(as: UInt64.self)), UInt64(bigEndian: $0.load(fromByteOffset: 8, as: UInt64.self))) }
    }

    /// The UUID's sixteen bytes in order, as the planner stores reminder ids.
    public var bytes: Data { withUnsafeBytes(of: uuid.uuid) { Data($0) } }

    /// The id whose `bytes` these are; nil unless there are exactly sixteen.
    public init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 16 else { return nil }
        self.init(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)))
    }

    /// The name-based, SHA-1 (version 5) UUID of RFC 9562 §5.5 for `name` (its UTF-8 bytes) in
    /// `namespace`: the same on every process and platform as any other v5 implementation
    /// (Python's `uuid.uuid5`, for one).
    public static func nameBased(namespace: RecordID, name: String) -> RecordID {
        var hash = SHA1.digest(withUnsafeBytes(of: namespace.uuid.uuid) { Array($0) } + Array(name.utf8))
        hash[6] = (hash[6] & 0x0F) | 0x50  // version 5
        hash[8] = (hash[8] & 0x3F) | 0x80  // variant 10xx
        return RecordID(UUID(uuid: (hash[0], hash[1], hash[2], hash[3], hash[4], hash[5], hash[6], hash[7],
                                    hash[8], hash[9], hash[10], hash[11], hash[12], hash[13], hash[14], hash[15])))
    }
}



/// Random bits for ids, from the kernel's CSPRNG (/dev/urandom), read 4 KB (256 ids) at a time
/// behind a lock so any thread may ask. Unpredictable, not merely unique: a client sees the ids the
/// services make for it (`reminder.put` without one), and must not learn from them the ids made
/// next for others, which it could claim first (PROTOCOL: "ids are UUIDs: unguessable").
/// Foundation's `UUID()` opens /dev/urandom per id; this reads it once per 256.
final class IDGenerator: @unchecked Sendable {
    static let shared = IDGenerator()
    private let lock = NSLock()
    private var words = [UInt64](repeating: 0, count: 512)
    private var used = 512
    /// The kernel's generator, opened once: /dev/urandom never blocks once the pool is seeded.
    private let urandom = FileHandle(forReadingAtPath: "/dev/urandom")

    private init() {}

    private func nextWord() -> UInt64 {
        if used == words.count {
            words.withUnsafeMutableBytes(fillRandom)
            used = 0
        }
        defer { used += 1 }
        return words[used]
    }

    private func fillRandom(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let urandom else { return fillFromSystem(bytes) }
        var filled = 0
        while filled < bytes.count {
            let read = Glibc.read(urandom.fileDescriptor, bytes.baseAddress! + filled, bytes.count - filled)
            if read > 0 {
                filled += read
            } else if read == 0 || errno != EINTR {
                return fillFromSystem(bytes)
            }
        }
    }

    /// Eight bytes a system call: only where /dev/urandom cannot be read.
    private func fillFromSystem(_ bytes: UnsafeMutableRawBufferPointer) {
        var system = SystemRandomNumberGenerator()
        for offset in stride(from: 0, to: bytes.count, by: 8) { bytes.storeBytes(of: system.next(), toByteOffset: offset, as: UInt64.self) }
    }

    /// A version 7 id for the Unix time `milliseconds` (48 bits).
    func next(milliseconds: UInt64) -> UUID {
        lock.lock()
        var high = nextWord(), low = nextWord()
        lock.unlock()
        high = milliseconds << 16 | 0x7000 | (high & 0x0FFF)  // time, version 7, 12 random bits
        low = (low & ~(0xC << 60)) | (0x8 << 60)  // RFC 4122 variant
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }
}

/// Decodes a string enum with an error that lists what is allowed.
func decodeWireEnum<Value: RawRepresentable & CaseIterable>(_ decoder: Decoder) throws -> Value where Value.RawValue == String {
    let container = try decoder.singleValueContainer()
    let text = try container.decode(String.self)
    guard let value = Value(rawValue: text) else {
        let allowed = Value.allCases.map(\.rawValue).joined(separator: ", ")
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected one of \(allowed), got \"\(text.prefix(40))\"")
    }
    return value
}

extension Activity {
    public init(from decoder: Decoder) throws { self = try decodeWireEnum(decoder) }
}

extension NoAlcLevel {
    public init(from decoder: Decoder) throws { self = try decodeWireEnum(decoder) }
}

extension Weekday {
    public init(from decoder: Decoder) throws { self = try decodeWireEnum(decoder) }
}

extension NotificationLocale {
    public init(from decoder: Decoder) throws { self = try decodeWireEnum(decoder) }
}
