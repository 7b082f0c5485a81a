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
        guard let node = JSONTree.parse(bytes) else { return nil }
        return try? Value(from: NodeDecoder(node: node))
    }
}

/// A parsed JSON value. Numbers keep their text's integer value when it has one.
enum JSONNode {
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONNode])
    case object([JSONMember])
}

/// An object's member. A struct, not a `(key:value:)` pair, which the runtime destroyed through its
/// generic tuple witnesses (1.5 % of decoding a page of events).
struct JSONMember {
    let key: String
    let value: JSONNode
}

/// A strict recursive-descent parser into `JSONNode`; nil for anything it does not take (invalid
/// JSON, escapes in strings, nesting deeper than 64), which the caller hands to Foundation.
enum JSONTree {
    static func parse(_ buffer: UnsafeRawBufferPointer) -> JSONNode? {
        var parser = Parser(bytes: buffer.bindMemory(to: UInt8.self))
        parser.skipWhitespace()
        guard let node = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.index == parser.bytes.count ? node : nil
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) -> JSONNode? {
            guard depth < 64, let byte = peek else { return nil }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONNode.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func object(depth: Int) -> JSONNode? {
            index += 1
            var members: [JSONMember] = []
            // Wire objects have about this many members: one allocation instead of four growing.
            members.reserveCapacity(8)
            skipWhitespace()
            if peek == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard peek == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { return nil }
                index += 1
                skipWhitespace()
                guard let member = value(depth: depth + 1) else { return nil }
                members.append(JSONMember(key: key, value: member))
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"): index += 1; return .object(members)
                default: return nil
                }
            }
        }

        mutating func array(depth: Int) -> JSONNode? {
            index += 1
            var items: [JSONNode] = []
            skipWhitespace()
            if peek == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                skipWhitespace()
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"): index += 1; return .array(items)
                default: return nil
                }
            }
        }

        /// A string without escapes or control characters, as valid UTF-8.
        mutating func string() -> String? {
            let start = index + 1
            var end = start
            var ascii = true
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                guard bytes[end] >= 0x20, bytes[end] != UInt8(ascii: "\\") else { return nil }
                ascii = ascii && bytes[end] < 0x80
                end += 1
            }
            guard end < bytes.count else { return nil }
            index = end + 1
            let text = UnsafeBufferPointer(rebasing: bytes[start..<end])
            // ASCII is valid UTF-8: only other strings need the (costlier) validation.
            return ascii ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
        }

        mutating func literal(_ text: StaticString, _ node: JSONNode) -> JSONNode? {
            let length = text.utf8CodeUnitCount
            guard index + length <= bytes.count,
                  text.withUTF8Buffer({ $0.elementsEqual(UnsafeBufferPointer(rebasing: bytes[index..<(index + length)])) }) else { return nil }
            index += length
            return node
        }

        /// RFC 8259's number grammar; an integer literal that fits is kept exact.
        mutating func number() -> JSONNode? {
            let start = index
            if peek == UInt8(ascii: "-") { index += 1 }
            guard let first = peek, isDigit(first) else { return nil }
            index += 1
            if first != UInt8(ascii: "0") { while let byte = peek, isDigit(byte) { index += 1 } }
            var integral = true
            if peek == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard digits() else { return nil }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                integral = false
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() else { return nil }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if integral, let integer = Int64(text) { return .integer(integer) }
            // Out of Double's range (1e400) is Foundation's to refuse.
            return Double(text).flatMap { $0.isFinite ? .number($0) : nil }
        }

        mutating func digits() -> Bool {
            let start = index
            while let byte = peek, isDigit(byte) { index += 1 }
            return index > start
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }
}

/// Anything the lean decoder does not take as Foundation would; the caller decodes with Foundation.
private struct NotLean: Error {}

/// The value `node` holds as `type`, reading scalars directly and everything else through its `init(from:)`.
private func decodeNode<T: Decodable>(_ node: JSONNode, as type: T.Type) throws -> T {
    // Metatype comparisons, not `as?` casts: failed dynamic casts cost more than the decoding.
    if T.self == String.self { guard case .string(let text) = node else { throw NotLean() }; return text as! T }
    if T.self == Int.self { return Int(try integer(node)) as! T }
    if T.self == Int64.self { return try integer(node) as! T }
    if T.self == Bool.self { guard case .bool(let flag) = node else { throw NotLean() }; return flag as! T }
    if T.self == Double.self {
        switch node {
        case .integer(let integer): return Double(integer) as! T
        case .number(let number): return number as! T
        default: throw NotLean()
        }
    }
    // Foundation decodes these with strategies of its own; other scalar widths are not on the wire.
    if T.self == Data.self || T.self == Date.self || T.self == URL.self || T.self == Decimal.self || T.self == Float.self {
        throw NotLean()
    }
    return try T(from: NodeDecoder(node: node))
}

private func integer(_ node: JSONNode) throws -> Int64 {
    guard case .integer(let integer) = node else { throw NotLean() }
    return integer
}

private struct NodeDecoder: Decoder {
    let node: JSONNode
    // Paths only matter for errors, and every error is decoded again by Foundation, which has them.
    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw NotLean() }
        return KeyedDecodingContainer(KeyedNodes<Key>(members: members))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard case .array(let items) = node else { throw NotLean() }
        return UnkeyedNodes(items: items)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleNode(node: node) }
}

private struct KeyedNodes<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [JSONMember]
    var codingPath: [CodingKey] { [] }
    var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

    /// The first member of that name, as Foundation reads duplicates.
    func member(_ key: Key) throws -> JSONNode {
        let name = key.stringValue
        guard let found = members.first(where: { $0.key == name }) else { throw NotLean() }
        return found.value
    }

    func contains(_ key: Key) -> Bool { members.contains { $0.key == key.stringValue } }
    func decodeNil(forKey key: Key) throws -> Bool { if case .null = try member(key) { true } else { false } }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decodeNode(member(key), as: type) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeNode(member(key), as: type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decodeNode(member(key), as: type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodeNode(member(key), as: type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeNode(member(key), as: type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeNode(member(key), as: type) }
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
    let items: [JSONNode]
    var currentIndex = 0
    var codingPath: [CodingKey] { [] }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func next() throws -> JSONNode {
        guard !isAtEnd else { throw NotLean() }
        defer { currentIndex += 1 }
        return items[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, case .null = items[currentIndex] else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNode(next(), as: type) }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try decodeNode(next(), as: type) }
    mutating func decode(_ type: String.Type) throws -> String { try decodeNode(next(), as: type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try decodeNode(next(), as: type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try decodeNode(next(), as: type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeNode(next(), as: type) }
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
    let node: JSONNode
    var codingPath: [CodingKey] { [] }

    func decodeNil() -> Bool { if case .null = node { true } else { false } }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNode(node, as: type) }
    func decode(_ type: Bool.Type) throws -> Bool { try decodeNode(node, as: type) }
    func decode(_ type: String.Type) throws -> String { try decodeNode(node, as: type) }
    func decode(_ type: Double.Type) throws -> Double { try decodeNode(node, as: type) }
    func decode(_ type: Int.Type) throws -> Int { try decodeNode(node, as: type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeNode(node, as: type) }
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
