// The lean decoder's parse: a document's bytes as tokens (WireJSONDecoder.swift reads them).

/// One JSON value of a document, in document order: an object's members follow it as key, value,
/// key, value…, an array's items follow it, and `end` is the index after the value's last token,
/// so a reader steps over a value without looking inside. Strings and numbers are byte ranges of
/// the document, read only when decoded: no `String` is made for a key, nor for a value nobody asks for.
struct JSONToken {
    enum Kind: UInt8 { case object, array, string, integer, number, `true`, `false`, null }

    let kind: Kind
    /// Strings: the first byte after the opening quote; numbers: the first byte.
    let start: Int32
    /// Strings and numbers: bytes; objects: members; arrays: items.
    var count: Int32
    var end: Int32
}

/// A document's bytes and its `JSONToken`s, both borrowed for one decoding (`leanDecode`). A
/// strict recursive-descent pass (`parse`) makes the tokens; it takes nothing it cannot read as
/// Foundation does (invalid JSON or UTF-8, escapes or control characters in strings, a number out
/// of Double's range, nesting deeper than 64): that the caller hands to Foundation.
///
/// Tokens, not a tree of nodes: the tree made a `String` per key and value and an array per
/// object (decision [0009](../../docs/decisions/0009-hand-written-json-codec.md)).
final class JSONDocument {
    let bytes: UnsafeBufferPointer<UInt8>
    let tokens: UnsafeBufferPointer<JSONToken>

    init(bytes: UnsafeBufferPointer<UInt8>, tokens: UnsafeBufferPointer<JSONToken>) {
        self.bytes = bytes
        self.tokens = tokens
    }

    /// The tokens of `bytes`; nil when the pass does not take them.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> [JSONToken]? {
        // Offsets are 32-bit, which halves the tokens' size; nothing on the wire comes near 2 GB.
        guard bytes.count < Int(Int32.max) else { return nil }
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        guard parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.index == bytes.count ? parser.tokens : nil
    }

    /// A string's or number's bytes.
    func text(_ token: JSONToken) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(token.start)..<Int(token.start + token.count)])
    }

    /// An integer literal's value; nil when it does not fit an Int64.
    static func integer(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = text.first == UInt8(ascii: "-")
        var value: Int64 = 0
        for byte in text.dropFirst(negative ? 1 : 0) {
            // Accumulated below zero, where Int64.min fits too.
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, borrow) = times10.subtractingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
            guard !overflow, !borrow else { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    static func double(_ text: UnsafeBufferPointer<UInt8>) -> Double? { Double(String(decoding: text, as: UTF8.self)) }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var tokens: [JSONToken] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            // About one token per ten bytes of wire JSON: one allocation for most documents.
            tokens.reserveCapacity(bytes.count / 10 + 4)
        }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) -> Bool {
            guard depth < 64, let byte = peek else { return false }
            switch byte {
            case UInt8(ascii: "{"): return container(.object, closedBy: UInt8(ascii: "}"), depth: depth)
            case UInt8(ascii: "["): return container(.array, closedBy: UInt8(ascii: "]"), depth: depth)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true", .true)
            case UInt8(ascii: "f"): return literal("false", .false)
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        /// An object (key, value, key, value…) or an array (values), up to `close`.
        mutating func container(_ kind: JSONToken.Kind, closedBy close: UInt8, depth: Int) -> Bool {
            let position = tokens.count
            tokens.append(JSONToken(kind: kind, start: Int32(truncatingIfNeeded: index), count: 0, end: 0))
            index += 1
            var count: Int32 = 0
            skipWhitespace()
            if peek == close {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    if kind == .object {
                        guard peek == UInt8(ascii: "\""), string() else { return false }
                        skipWhitespace()
                        guard peek == UInt8(ascii: ":") else { return false }
                        index += 1
                        skipWhitespace()
                    }
                    guard value(depth: depth + 1) else { return false }
                    count += 1
                    skipWhitespace()
                    guard let byte = peek else { return false }
                    index += 1
                    if byte == close { break }
                    guard byte == UInt8(ascii: ",") else { return false }
                }
            }
            tokens[position].count = count
            tokens[position].end = Int32(truncatingIfNeeded: tokens.count)
            return true
        }

        /// A string without escapes or control characters, as valid UTF-8.
        mutating func string() -> Bool {
            let start = index + 1
            var end = start
            var ascii = true
            // Through the base pointer: the bounds are the loops' own conditions.
            guard let base = bytes.baseAddress else { return false }
            // Eight bytes at a time while none needs a look: ids, instants and topics are 20–40 bytes.
            while end + 8 <= bytes.count, Self.isPlain(UnsafeRawPointer(base + end).loadUnaligned(as: UInt64.self)) { end += 8 }
            while end < bytes.count {
                let byte = base[end]
                if byte == UInt8(ascii: "\"") { break }
                guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return false }
                ascii = ascii && byte < 0x80
                end += 1
            }
            guard end < bytes.count else { return false }
            // ASCII is valid UTF-8: only other strings need the (costlier) validation.
            if !ascii, String(validating: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) == nil { return false }
            append(.string, start: start, end: end)
            index = end + 1
            return true
        }

        /// Whether none of eight string bytes is a quote, a backslash, a control character or
        /// non-ASCII. Each test is the classic "has a zero byte" one, `(v - 0x01…) & ~v & 0x80…`,
        /// exact for whether any byte matches (and a byte ≥ 0x80 is caught by its own high bit).
        static func isPlain(_ word: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let quote = word ^ (ones &* UInt64(UInt8(ascii: "\""))), backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let special = word | ((word &- ones &* 0x20) & ~word) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            return special & (ones &* 0x80) == 0
        }

        mutating func literal(_ text: StaticString, _ kind: JSONToken.Kind) -> Bool {
            let end = index + text.utf8CodeUnitCount
            guard end <= bytes.count,
                  text.withUTF8Buffer({ $0.elementsEqual(UnsafeBufferPointer(rebasing: bytes[index..<end])) }) else { return false }
            append(kind, start: index, end: end)
            index = end
            return true
        }

        /// RFC 8259's number grammar; an integer literal that fits an Int64 is an `integer`.
        mutating func number() -> Bool {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            guard let first = peek, isDigit(first) else { return false }
            index += 1
            if first != UInt8(ascii: "0") { while let byte = peek, isDigit(byte) { index += 1 } }
            var integral = true
            if peek == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard digits() else { return false }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                integral = false
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() else { return false }
            }
            let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
            if integral, JSONDocument.integer(text) != nil {
                append(.integer, start: start, end: index)
                return true
            }
            // Out of Double's range (1e400) is Foundation's to refuse.
            guard JSONDocument.double(text)?.isFinite == true else { return false }
            append(.number, start: start, end: index)
            return true
        }

        mutating func digits() -> Bool {
            let start = index
            while let byte = peek, isDigit(byte) { index += 1 }
            return index > start
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        /// A scalar token over `start..<end`.
        mutating func append(_ kind: JSONToken.Kind, start: Int, end: Int) {
            tokens.append(JSONToken(kind: kind, start: Int32(truncatingIfNeeded: start), count: Int32(truncatingIfNeeded: end - start),
                                    end: Int32(truncatingIfNeeded: tokens.count + 1)))
        }
    }
}
