import Foundation

extension WireJSON {
    /// Decodes `type` from JSON bytes: a lean pass for the usual case, Foundation's JSONDecoder for
    /// anything else.
    ///
    /// Foundation's decoder cost a quarter of a `session.log` (about 60,000 instructions a request).
    /// This one parses the bytes into a small tree and hands it to the type's `init(from:)`. It takes
    /// only what it reads exactly as Foundation does — strings without escapes, integers as written,
    /// no Foundation value types — and gives up on anything else, and on every error: then Foundation
    /// decodes the bytes again, so a result or an error (its message and field) is always Foundation's.
    public static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        if let value = leanDecode(type, from: data) { return value }
        return try JSONDecoder().decode(type, from: data)
    }

    /// As `decode(_:from:)`, from bytes that are not a `Data` (a received frame where libzmq holds
    /// it): they are copied only if Foundation has to decode them.
    public static func decode<Value: Decodable>(_ type: Value.Type, fromBytes bytes: UnsafeRawBufferPointer) throws -> Value {
        if let value = leanDecode(type, from: bytes) { return value }
        return try JSONDecoder().decode(type, from: Data(bytes))
    }

    /// The lean pass alone: nil when it leaves the bytes to Foundation.
    static func leanDecode<Value: Decodable>(_ type: Value.Type, from data: Data) -> Value? {
        data.withUnsafeBytes { leanDecode(type, from: $0) }
    }

    static func leanDecode<Value: Decodable>(_ type: Value.Type, from bytes: UnsafeRawBufferPointer) -> Value? {
        let text = bytes.bindMemory(to: UInt8.self)
        guard let tokens = JSONDocument.parse(text) else { return nil }
        return tokens.withUnsafeBufferPointer { tokens in
            let document = JSONDocument(bytes: text, tokens: tokens)
            return withExtendedLifetime(document) { try? Value(from: NodeDecoder(node: Node(document: document, index: 0))) }
        }
    }
}

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
/// object; decoding a page of events cost about 40,000 instructions an event.
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

/// Anything the lean decoder does not take as Foundation would; the caller decodes with Foundation.
private struct NotLean: Error {}

/// A value of a parsed document, by its token.
///
/// Two words, unretained: a decoder or container is passed as an existential, which holds up to
/// three words in place and allocates a box for anything larger (one per value decoded), and the
/// document outlives every decoder of it (`leanDecode`).
private struct Node {
    unowned(unsafe) let document: JSONDocument
    let index: Int

    var token: JSONToken { document.tokens[index] }

    /// The members of an object, or the items of an array, in order: for an object, each member's
    /// key (`index`) followed by its value (`index + 1`).
    func children() -> ChildSequence {
        ChildSequence(document: document, first: index + 1, count: Int(token.count), step: token.kind == .object ? 2 : 1)
    }

    struct ChildSequence: Sequence, IteratorProtocol {
        unowned(unsafe) let document: JSONDocument
        private var following: Int
        private var remaining: Int
        /// Where in a child the token is whose `end` is the next child, plus one: 2 for a member
        /// (its key, then its value), 1 for an item.
        private let step: Int

        init(document: JSONDocument, first: Int, count: Int, step: Int) {
            self.document = document
            following = first
            remaining = count
            self.step = step
        }

        /// The index of the next member's key, or the next item.
        mutating func next() -> Int? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let current = following
            // Past the key (a single token) and the value's tokens.
            following = Int(document.tokens[current + step - 1].end)
            return current
        }
    }

    func string() throws -> String {
        let token = token
        guard token.kind == .string else { throw NotLean() }
        return String(decoding: document.text(token), as: UTF8.self)
    }

    func integer() throws -> Int64 {
        let token = token
        guard token.kind == .integer, let value = JSONDocument.integer(document.text(token)) else { throw NotLean() }
        return value
    }

    var isNull: Bool { token.kind == .null }

    /// What `parse` makes of the string's bytes.
    func parsed<Value>(_ parse: (UnsafeBufferPointer<UInt8>) -> Value?) throws -> Value {
        let token = token
        guard token.kind == .string, let value = parse(document.text(token)) else { throw NotLean() }
        return value
    }
}

/// The value `node` holds as `type`, reading scalars directly and everything else through its `init(from:)`.
private func decodeNode<T: Decodable>(_ node: Node, as type: T.Type) throws -> T {
    // Metatype comparisons, not `as?` casts: failed dynamic casts cost more than the decoding.
    if T.self == String.self { return try node.string() as! T }
    if T.self == Int.self { return Int(try node.integer()) as! T }
    if T.self == Int64.self { return try node.integer() as! T }
    if T.self == Bool.self {
        switch node.token.kind {
        case .true: return true as! T
        case .false: return false as! T
        default: throw NotLean()
        }
    }
    if T.self == Double.self {
        let token = node.token
        switch token.kind {
        case .integer: return Double(try node.integer()) as! T
        case .number: return JSONDocument.double(node.document.text(token))! as! T
        default: throw NotLean()
        }
    }
    // Values that are one string on the wire (`WireString`), read from the document's bytes by the
    // parser their `init(from:)` ends in, without making the string (an allocation for ids and instants).
    if T.self == RecordID.self { return try node.parsed(RecordID.parse) as! T }
    if T.self == Instant.self { return try node.parsed(Instant.parse) as! T }
    if T.self == LocalDay.self { return try node.parsed(LocalDay.parse) as! T }
    // Foundation decodes these with strategies of its own; other scalar widths are not on the wire.
    if T.self == Data.self || T.self == Date.self || T.self == URL.self || T.self == Decimal.self || T.self == Float.self {
        throw NotLean()
    }
    return try T(from: NodeDecoder(node: node))
}

private struct NodeDecoder: Decoder {
    let node: Node
    // Paths only matter for errors, and every error is decoded again by Foundation, which has them.
    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard node.token.kind == .object else { throw NotLean() }
        return KeyedDecodingContainer(KeyedNodes<Key>(object: node))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard node.token.kind == .array else { throw NotLean() }
        return UnkeyedNodes(array: node)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleNode(node: node) }
}

private struct KeyedNodes<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: Node
    var codingPath: [CodingKey] { [] }

    var allKeys: [Key] {
        object.children().compactMap { (try? Node(document: object.document, index: $0).string()).flatMap(Key.init(stringValue:)) }
    }

    /// The value of the first member of that name, as Foundation reads duplicates; nil when there is none.
    func find(_ key: Key) -> Node? {
        let name = key.stringValue
        let document = object.document
        func search(_ name: UnsafeBufferPointer<UInt8>) -> Node? {
            for keyIndex in object.children() {
                let key = document.tokens[keyIndex]
                if Int(key.count) == name.count,
                   name.isEmpty || memcmp(document.bytes.baseAddress! + Int(key.start), name.baseAddress!, name.count) == 0 {
                    return Node(document: document, index: keyIndex + 1)
                }
            }
            return nil
        }
        return name.utf8.withContiguousStorageIfAvailable(search) ?? Array(name.utf8).withUnsafeBufferPointer(search)
    }

    func member(_ key: Key) throws -> Node {
        guard let found = find(key) else { throw NotLean() }
        return found
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { try member(key).isNull }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decodeNode(member(key), as: type) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeNode(member(key), as: type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(key).string() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodeNode(member(key), as: type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { Int(try member(key).integer()) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(key).integer() }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw NotLean() }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { throw NotLean() }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { throw NotLean() }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { throw NotLean() }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { throw NotLean() }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { throw NotLean() }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { throw NotLean() }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { throw NotLean() }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { throw NotLean() }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try NodeDecoder(node: member(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer { try NodeDecoder(node: member(key)).unkeyedContainer() }
    func superDecoder() throws -> Decoder { throw NotLean() }
    func superDecoder(forKey key: Key) throws -> Decoder { throw NotLean() }
}

private struct UnkeyedNodes: UnkeyedDecodingContainer {
    private var items: Node.ChildSequence
    private(set) var currentIndex = 0
    let count: Int?
    var codingPath: [CodingKey] { [] }
    var isAtEnd: Bool { currentIndex >= count! }

    init(array: Node) {
        items = array.children()
        count = Int(array.token.count)
    }

    /// The current item, without moving past it.
    private var current: Node? {
        var peek = items
        return peek.next().map { Node(document: items.document, index: $0) }
    }

    mutating func next() throws -> Node {
        guard let index = items.next() else { throw NotLean() }
        currentIndex += 1
        return Node(document: items.document, index: index)
    }

    mutating func decodeNil() throws -> Bool {
        guard current?.isNull == true else { return false }
        _ = try next()
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNode(next(), as: type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try decodeNode(next(), as: type) }
    mutating func decode(_ type: String.Type) throws -> String { try next().string() }
    mutating func decode(_ type: Double.Type) throws -> Double { try decodeNode(next(), as: type) }
    mutating func decode(_ type: Int.Type) throws -> Int { Int(try next().integer()) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().integer() }
    mutating func decode(_ type: Float.Type) throws -> Float { throw NotLean() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { throw NotLean() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { throw NotLean() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { throw NotLean() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { throw NotLean() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { throw NotLean() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { throw NotLean() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { throw NotLean() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { throw NotLean() }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try NodeDecoder(node: next()).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer { try NodeDecoder(node: next()).unkeyedContainer() }
    mutating func superDecoder() throws -> Decoder { throw NotLean() }
}

private struct SingleNode: SingleValueDecodingContainer {
    let node: Node
    var codingPath: [CodingKey] { [] }

    func decodeNil() -> Bool { node.isNull }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNode(node, as: type) }
    func decode(_ type: Bool.Type) throws -> Bool { try decodeNode(node, as: type) }
    func decode(_ type: String.Type) throws -> String { try node.string() }
    func decode(_ type: Double.Type) throws -> Double { try decodeNode(node, as: type) }
    func decode(_ type: Int.Type) throws -> Int { Int(try node.integer()) }
    func decode(_ type: Int64.Type) throws -> Int64 { try node.integer() }
    func decode(_ type: Float.Type) throws -> Float { throw NotLean() }
    func decode(_ type: Int8.Type) throws -> Int8 { throw NotLean() }
    func decode(_ type: Int16.Type) throws -> Int16 { throw NotLean() }
    func decode(_ type: Int32.Type) throws -> Int32 { throw NotLean() }
    func decode(_ type: UInt.Type) throws -> UInt { throw NotLean() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { throw NotLean() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { throw NotLean() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { throw NotLean() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { throw NotLean() }
}
