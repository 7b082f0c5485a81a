/// One row of a result whose columns come in their text form, as PostgreSQL sends them (nil for NULL).
public struct TextRow: Sendable {
    public let columns: [String?]

    public init(columns: [String?]) { self.columns = columns }

    public func text(_ column: Int) -> String? { columns[column] }

    public func int64(_ column: Int) -> Int64? { columns[column].flatMap { Int64($0) } }

    /// A `bytea` column, from its text form: `\x` and hex digits (the server's default output), or
    /// the older escape form (`\\` for a backslash, `\ooo` for a byte in octal).
    public func bytes(_ column: Int) -> [UInt8]? {
        guard let text = columns[column] else { return nil }
        let utf8 = Array(text.utf8)
        if utf8.starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "x")]) { return Self.hex(utf8.dropFirst(2)) }
        return Self.escaped(utf8)
    }

    private static func hex(_ digits: ArraySlice<UInt8>) -> [UInt8]? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func escaped(_ text: [UInt8]) -> [UInt8] {
        let backslash = UInt8(ascii: "\\"), zero = UInt8(ascii: "0")
        var bytes: [UInt8] = [], index = 0
        while index < text.count {
            if text[index] == backslash, index + 1 < text.count, text[index + 1] == backslash {
                bytes.append(backslash)
                index += 2
            } else if text[index] == backslash, index + 3 < text.count, text[index + 1...index + 3].allSatisfy({ (zero...zero + 7).contains($0) }) {
                bytes.append((text[index + 1] - zero) << 6 | (text[index + 2] - zero) << 3 | (text[index + 3] - zero))
                index += 4
            } else {
                bytes.append(text[index])
                index += 1
            }
        }
        return bytes
    }
}
