import Foundation

/// A strict RFC 8259 syntax check: UTF-8, string escapes and surrogate pairs, number grammar,
/// nesting at most `maxDepth`.
///
/// JSONDecoder only validates what it decodes, so without this a frame with a broken string in
/// an ignored field, or in UTF-16, would be accepted; PROTOCOL.md says such a frame is `bad_json`.
/// One pass over the bytes, far cheaper than a second parse into objects.
public enum JSONSyntax {
    /// Where the top-level members a request envelope cares about sit in the frame (the first of
    /// each name, as JSONDecoder reads duplicates).
    struct TopLevel {
        var version: Range<Int>?
        var op: Range<Int>?
        var data: Range<Int>?
        /// `as`: the user a service or admin acts for (PROTOCOL "Acting for a user").
        var actingFor: Range<Int>?
    }

    /// Nil unless `data` is one well-formed JSON object; else the envelope members' value ranges,
    /// found in the same pass, so reading the envelope needs no second parse.
    static func object(_ data: Data, maxDepth: Int = 512) -> TopLevel? {
        data.withUnsafeBytes { buffer in
            var scanner = Scanner(bytes: buffer.bindMemory(to: UInt8.self), maxDepth: maxDepth)
            scanner.skipWhitespace()
            guard scanner.peek == UInt8(ascii: "{"), scanner.value(depth: 0) else { return nil }
            scanner.skipWhitespace()
            return scanner.index == buffer.count ? scanner.topLevel : nil
        }
    }

    /// Whether `data` is exactly one well-formed JSON value (a reply's `data` member, say).
    public static func isValue(_ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var scanner = Scanner(bytes: buffer.bindMemory(to: UInt8.self), maxDepth: 512)
            guard scanner.value(depth: 0) else { return false }
            scanner.skipWhitespace()
            return scanner.index == buffer.count
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        let maxDepth: Int
        var index = 0
        var topLevel = TopLevel()

        init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ literal: StaticString) -> Bool {
            var matched = true
            literal.withUTF8Buffer { text in
                guard index + text.count <= bytes.count else { matched = false; return }
                for offset in 0..<text.count where bytes[index + offset] != text[offset] { matched = false; return }
            }
            if matched { index += literal.utf8CodeUnitCount }
            return matched
        }

        mutating func value(depth: Int) -> Bool {
            skipWhitespace()
            guard let byte = peek else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < maxDepth && object(depth: depth + 1)
            case UInt8(ascii: "["): return depth < maxDepth && array(depth: depth + 1)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return expect("true")
            case UInt8(ascii: "f"): return expect("false")
            case UInt8(ascii: "n"): return expect("null")
            default: return number()
            }
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            skipWhitespace()
            if peek == UInt8(ascii: "}") { index += 1; return true }
            while true {
                skipWhitespace()
                let keyStart = index
                guard peek == UInt8(ascii: "\""), string() else { return false }
                let key = keyStart..<index
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { return false }
                index += 1
                skipWhitespace()
                let valueStart = index
                guard value(depth: depth) else { return false }
                if depth == 1 { note(key: key, value: valueStart..<index) }
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return true
                default: return false
                }
            }
        }

        /// Records a member of the outermost object if its name (written without escapes) is one we read.
        mutating func note(key: Range<Int>, value: Range<Int>) {
            func named(_ name: StaticString) -> Bool {
                name.withUTF8Buffer { text in
                    key.count == text.count + 2 && zip(bytes[(key.lowerBound + 1)..<(key.upperBound - 1)], text).allSatisfy { $0 == $1 }
                }
            }
            if named("v") { topLevel.version = topLevel.version ?? value } else if named("op") { topLevel.op = topLevel.op ?? value } else if named("data") { topLevel.data = topLevel.data ?? value }
            else if named("as") { topLevel.actingFor = topLevel.actingFor ?? value }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            skipWhitespace()
            if peek == UInt8(ascii: "]") { index += 1; return true }
            while true {
                guard value(depth: depth) else { return false }
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return true
                default: return false
                }
            }
        }

        mutating func digits() -> Int {
            let start = index
            while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
            return index - start
        }

        mutating func number() -> Bool {
            if peek == UInt8(ascii: "-") { index += 1 }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else if digits() == 0 {
                return false
            }
            if peek == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return false }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return false }
            }
            return true
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        mutating func string() -> Bool {
            index += 1
            while let byte = peek {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = peek else { return false }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                         UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return false }
                        if (0xDC00...0xDFFF).contains(unit) { return false }  // a low surrogate alone
                        if (0xD800...0xDBFF).contains(unit) {
                            guard expect("\\u"), let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return false }
                        }
                    default:
                        return false
                    }
                case 0..<0x20:
                    return false
                case 0..<0x80:
                    index += 1
                default:
                    guard utf8Sequence() else { return false }
                }
            }
            return false
        }

        /// One multi-byte UTF-8 scalar: no overlong forms, no surrogates, nothing above U+10FFFF.
        mutating func utf8Sequence() -> Bool {
            let lead = bytes[index]
            let length: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F
            default: return false
            }
            guard index + length <= bytes.count else { return false }
            for offset in 1..<length {
                let byte = bytes[index + offset]
                let (low, high) = offset == 1 ? (lower, upper) : (0x80, 0xBF)
                guard byte >= low, byte <= high else { return false }
            }
            index += length
            return true
        }
    }
}
