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

    public init(_ uuid: UUID = UUID()) { self.uuid = uuid }

    public init?(_ text: String) {
        // The 8-4-4-4-12 shape first: Foundation on Linux skips white space inside the groups.
        guard text.utf8.count == 36, text.utf8.enumerated().allSatisfy(RecordID.fitsShape), let uuid = UUID(uuidString: text) else { return nil }
        self.uuid = uuid
    }

    /// Lower-case 8-4-4-4-12 hex, written directly: `uuidString.lowercased()` costs microseconds per id.
    public var description: String {
        let hex = RecordID.hexDigits
        return withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { buffer in
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
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func fitsShape(_ position: (offset: Int, element: UInt8)) -> Bool {
        let byte = position.element
        if [8, 13, 18, 23].contains(position.offset) { return byte == UInt8(ascii: "-") }
        return (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }

    public static func < (lhs: RecordID, rhs: RecordID) -> Bool { lhs.description < rhs.description }
}

extension UserID: Codable {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = UserID(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a userId is 1-64 characters of A-Z a-z 0-9 _ -")
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension RecordID: Codable {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = RecordID(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a UUID such as 3f2b8c1e-0000-4000-8000-000000000000")
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
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
