import Foundation

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

    /// A new random (version 4) id. Foundation's `UUID()` on Linux opens /dev/urandom for every id,
    /// a fifth of the planner's time per decision; this draws from a generator seeded once.
    public init() { uuid = IDGenerator.shared.next() }

    /// Strictly 8-4-4-4-12 hex digits, either case. Parsed here rather than by `UUID(uuidString:)`,
    /// which on Linux skips white space inside the groups and costs microseconds (sscanf).
    public init?(_ text: String) {
        // Through the contiguous bytes: iterating a String's UTF-8 view costs ten times as much.
        var text = text
        guard let id = text.withUTF8({ RecordID(utf8: $0) }) else { return nil }
        self = id
    }

    /// The same from UTF-8 bytes (a column read in place). Inlinable, so each caller gets it
    /// specialized for its collection.
    @inlinable
    public init?(utf8 text: some Collection<UInt8>) {
        var bytes = (UInt64(0), UInt64(0))
        var nibbles = 0
        var valid = text.count == 36
        for (offset, byte) in text.enumerated() where valid {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                valid = byte == UInt8(ascii: "-")
                continue
            }
            let value: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = byte - UInt8(ascii: "A") + 10
            default: valid = false; continue
            }
            if nibbles < 16 { bytes.0 = bytes.0 << 4 | UInt64(value) } else { bytes.1 = bytes.1 << 4 | UInt64(value) }
            nibbles += 1
        }
        guard valid, nibbles == 32 else { return nil }
        uuid = withUnsafeBytes(of: (bytes.0.bigEndian, bytes.1.bigEndian)) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    /// Lower-case 8-4-4-4-12 hex, written directly: `uuidString.lowercased()` costs microseconds per id.
    public var description: String {
        String(unsafeUninitializedCapacity: RecordID.textLength) { write(into: $0) }
    }

    /// The length of `description`.
    public static let textLength = 36

    /// Writes `description`'s bytes into `buffer` (at least `textLength` long) and returns how many.
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let hex = RecordID.hexDigits
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            var out = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { buffer[out] = UInt8(ascii: "-"); out += 1 }
                buffer[out] = hex[Int(byte >> 4)]
                buffer[out + 1] = hex[Int(byte & 0x0F)]
                out += 2
            }
            return out
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The order of the lower-case text, computed on the bytes: the scheduler's heap compares ids
    /// whenever many reminders share an instant.
    public static func < (lhs: RecordID, rhs: RecordID) -> Bool { lhs.words < rhs.words }

    private var words: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid.uuid) { (UInt64(bigEndian: $0.load(as: UInt64.self)), UInt64(bigEndian: $0.load(fromByteOffset: 8, as: UInt64.self))) }
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



/// Random bits for ids: xoshiro256** seeded from the system's generator, behind a lock so any
/// thread may ask. Ids need to be unique, not unpredictable.
final class IDGenerator: @unchecked Sendable {
    static let shared = IDGenerator()
    private let lock = NSLock()
    private var state: (UInt64, UInt64, UInt64, UInt64)

    private init() {
        var system = SystemRandomNumberGenerator()
        state = (system.next(), system.next(), system.next(), system.next() | 1)
    }

    private func nextWord() -> UInt64 {
        let result = ((state.1 &* 5) << 7 | (state.1 &* 5) >> 57) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = state.3 << 45 | state.3 >> 19
        return result
    }

    func next() -> UUID {
        lock.lock()
        var high = nextWord(), low = nextWord()
        lock.unlock()
        high = (high & ~0xF000) | 0x4000  // version 4
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
