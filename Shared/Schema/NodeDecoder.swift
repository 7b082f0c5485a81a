import Foundation

/// The value `node` holds as `type`, reading scalars directly and everything else through its `init(from:)`.
func decodeNode<T: Decodable>(_ node: JSONNode, as type: T.Type) throws -> T {
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

struct NodeDecoder: Decoder {
    let node: JSONNode
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
    let object: JSONNode
    var codingPath: [CodingKey] { [] }

    var allKeys: [Key] {
        object.children().compactMap { (try? JSONNode(document: object.document, index: $0).string()).flatMap(Key.init(stringValue:)) }
    }

    /// The value of the first member of that name, as Foundation reads duplicates; nil when there is none.
    func find(_ key: Key) -> JSONNode? { object.member(named: key.stringValue) }

    func member(_ key: Key) throws -> JSONNode {
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
    private var items: JSONNode.ChildSequence
    private(set) var currentIndex = 0
    let count: Int?
    var codingPath: [CodingKey] { [] }
    var isAtEnd: Bool { currentIndex >= count! }

    init(array: JSONNode) {
        items = array.children()
        count = Int(array.token.count)
    }

    /// The current item, without moving past it.
    private var current: JSONNode? {
        var peek = items
        return peek.next().map { JSONNode(document: items.document, index: $0) }
    }

    mutating func next() throws -> JSONNode {
        guard let index = items.next() else { throw NotLean() }
        currentIndex += 1
        return JSONNode(document: items.document, index: index)
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
    let node: JSONNode
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
