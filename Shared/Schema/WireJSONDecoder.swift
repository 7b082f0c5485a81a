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
        withRoot(of: bytes) { try? Value(from: NodeDecoder(node: $0)) }
    }

    /// The lean pass of a `WireJSONReadable` type: its `init(members:)`; nil when it leaves the bytes to `decode`.
    static func leanRead<Value: WireJSONReadable>(_ type: Value.Type, from data: Data) -> Value? {
        data.withUnsafeBytes { bytes in
            withRoot(of: bytes) { root in root.token.kind == .object ? try? Value(members: JSONMembers(object: root)) : nil }
        }
    }

    /// `read` of the parsed document's root; nil when the lean parser does not take the bytes.
    private static func withRoot<Value>(of bytes: UnsafeRawBufferPointer, _ read: (Node) -> Value?) -> Value? {
        let text = bytes.bindMemory(to: UInt8.self)
        guard let tokens = JSONDocument.parse(text) else { return nil }
        return tokens.withUnsafeBufferPointer { tokens in
            let document = JSONDocument(bytes: text, tokens: tokens)
            return withExtendedLifetime(document) { read(Node(document: document, index: 0)) }
        }
    }
}

/// A request payload that reads its members itself, without `Decodable`'s containers, whose code
/// runs cold in a loop that sleeps between requests (`StreakGetRequest`, #30). `init(members:)`
/// must take exactly what the type's `init(from:)` takes, and throw on anything else (a member
/// missing, null where it must not be, of another type, not valid): `decode` then reads the bytes
/// through `init(from:)`, which gives the value or the error. A schema test holds the two to the
/// same results.
protocol WireJSONReadable: Decodable {
    init(members: JSONMembers) throws
}

/// The members of a JSON object, as a `WireJSONReadable` type reads them: by name, the first of a
/// name as Foundation reads duplicates, unknown ones ignored.
struct JSONMembers {
    fileprivate let object: Node

    /// A member that must be there, a string `Value` takes (`WireString`).
    func required<Value: WireString>(_ name: String) throws -> Value {
        guard let node = object.member(named: name) else { throw NotLean() }
        return try node.wireString()
    }

    /// A member that may be left out or null (`decodeIfPresent`).
    func optional<Value: WireString>(_ name: String) throws -> Value? {
        guard let node = object.member(named: name), !node.isNull else { return nil }
        return try node.wireString() as Value
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

    /// The string as the `WireString` it names, as its `init(from:)` reads it.
    func wireString<Value: WireString>() throws -> Value {
        guard let value = Value(wireText: try string()) else { throw NotLean() }
        return value
    }

    /// An object's member of that name, the first if there are several; nil when there is none.
    func member(named name: String) -> Node? {
        func search(_ name: UnsafeBufferPointer<UInt8>) -> Node? {
            for keyIndex in children() {
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
    func find(_ key: Key) -> Node? { object.member(named: key.stringValue) }

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
