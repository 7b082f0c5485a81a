import Foundation

/// Encodes wire values to compact JSON in one pass, keys in the order the type encodes them.
///
/// The one encoder for everything this system writes on the wire. Foundation's JSONEncoder on
/// Linux was a large part of a `session.log`'s budget (decision
/// [0009](../../docs/decisions/0009-hand-written-json-codec.md)). This one streams into a single
/// buffer: Codable calls are strictly nested (a value's `encode(to:)` finishes before its parent
/// writes the next key), so a container is closed as soon as anything is written at a shallower depth. Strings are escaped as RFC 8259
/// requires, slashes are left alone, non-finite numbers throw.
public enum WireJSON {
    public static func encode<Value: Encodable>(_ value: Value) throws -> Data {
        if let writable = value as? WireJSONWritable { return encode(writable: writable) }
        let stream = JSONStream()
        try stream.encodeValue(value, depth: 0, codingPath: [])
        stream.close(deeperThan: 0)
        guard !stream.unsupported else {
            // Containers used out of order, super encoders, Foundation's own value types: rare
            // patterns a stream cannot follow; Foundation's encoder gets them right.
            let encoder = JSONEncoder()
            encoder.outputFormatting = .withoutEscapingSlashes
            return try encoder.encode(value)
        }
        return Data(stream.bytes)
    }

    /// As `encode`, for a value known to write itself: without the runtime's conformance check,
    /// which costs more than writing a small value.
    public static func encode(writable value: some WireJSONWritable) -> Data {
        var object = JSONObjectWriter()
        value.writeFields(to: &object)
        return object.finished()
    }
}

private final class JSONStream {
    enum Kind { case object, array }

    struct Frame {
        let kind: Kind
        let id: Int
        var count = 0
        /// The encoder that opened it, so a second `container(keyedBy:)` call reuses it.
        let owner: ObjectIdentifier
    }

    // Only this stream's own nested calls touch these, one at a time; dynamic exclusivity checks
    // on them were a quarter of the encoding time.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    @exclusivity(unchecked) var frames: [Frame] = []
    /// Set when the value uses the Encoder API in a way a single forward pass cannot write.
    var unsupported = false
    private var framesOpened = 0

    init() { bytes.reserveCapacity(512) }

    func close(deeperThan depth: Int) {
        while frames.count > depth {
            bytes.append(frames.removeLast().kind == .object ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }

    /// Prepares to write the next member of container `frame` at `depth` (its frame is `frames[depth - 1]`).
    /// A container written to after a sibling closed it cannot be streamed: the caller falls back.
    func beginMember(depth: Int, frame: Int, key: String?) {
        guard !unsupported, frames.count >= depth, frames[depth - 1].id == frame else {
            unsupported = true
            return
        }
        close(deeperThan: depth)
        if frames[depth - 1].count > 0 { bytes.append(UInt8(ascii: ",")) }
        frames[depth - 1].count += 1
        if let key {
            appendString(key)
            bytes.append(UInt8(ascii: ":"))
        }
    }

    /// Opens (or, for the same encoder asking again, reopens) the container at `depth`; returns its id.
    func open(_ kind: Kind, depth: Int, owner: ObjectIdentifier) -> Int {
        if frames.count > depth, frames[depth].owner == owner, frames[depth].kind == kind {
            close(deeperThan: depth + 1)
            return frames[depth].id
        }
        if frames.count < depth { unsupported = true }
        close(deeperThan: depth)
        bytes.append(kind == .object ? UInt8(ascii: "{") : UInt8(ascii: "["))
        framesOpened += 1
        frames.append(Frame(kind: kind, id: framesOpened, owner: owner))
        return framesOpened
    }

    /// Writes a value whose slot (key or array position) is already written.
    func encodeValue<T: Encodable>(_ value: T, depth: Int, codingPath: [CodingKey]) throws {
        // Metatype comparisons, not `as?` casts: failed dynamic casts cost more than the encoding,
        // and so does `as!` in code not specialized for T.
        if T.self == String.self { return appendString(unsafeBitCast(value, to: String.self)) }
        if T.self == Int.self { return appendInteger(unsafeBitCast(value, to: Int.self)) }
        if T.self == Int64.self { return appendInteger(unsafeBitCast(value, to: Int64.self)) }
        if T.self == Bool.self { return appendLiteral(unsafeBitCast(value, to: Bool.self) ? "true" : "false") }
        if T.self == Double.self { return try appendDouble(unsafeBitCast(value, to: Double.self), codingPath) }
        if let text = Self.scalarText(value) { return appendString(text) }
        if T.self == Data.self || T.self == Date.self || T.self == URL.self || T.self == Decimal.self {
            unsupported = true  // Foundation encodes these with strategies of its own
            return
        }
        let start = bytes.count
        let encoder = StreamEncoder(stream: self, depth: depth, codingPath: codingPath)
        try value.encode(to: encoder)
        if bytes.count == start { appendLiteral("{}") }  // encoded nothing at all
    }

    /// The schema's own single-string values, written directly: going through their `encode(to:)`
    /// costs an encoder and a container per field, most of an occurrence's encoding time.
    static func scalarText<T>(_ value: T) -> String? {
        if T.self == Instant.self { return unsafeBitCast(value, to: Instant.self).description }
        if T.self == RecordID.self { return unsafeBitCast(value, to: RecordID.self).description }
        if T.self == UserID.self { return unsafeBitCast(value, to: UserID.self).rawValue }
        if T.self == LocalDay.self { return unsafeBitCast(value, to: LocalDay.self).description }
        if T.self == LocalTime.self { return unsafeBitCast(value, to: LocalTime.self).description }
        if T.self == ZoneID.self { return unsafeBitCast(value, to: ZoneID.self).identifier }
        if T.self == Activity.self { return unsafeBitCast(value, to: Activity.self).rawValue }
        if T.self == Weekday.self { return unsafeBitCast(value, to: Weekday.self).rawValue }
        if T.self == NoAlcLevel.self { return unsafeBitCast(value, to: NoAlcLevel.self).rawValue }
        if T.self == NotificationLocale.self { return unsafeBitCast(value, to: NotificationLocale.self).rawValue }
        if T.self == OccurrenceStatus.self { return unsafeBitCast(value, to: OccurrenceStatus.self).rawValue }
        return nil
    }

    func appendLiteral(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    func appendInteger<T: BinaryInteger>(_ value: T) { bytes.append(contentsOf: String(value).utf8) }

    func appendDouble(_ value: Double, _ codingPath: [CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: "JSON has no \(value)"))
        }
        if value.rounded() == value, abs(value) < 1e15 { appendInteger(Int64(value)) } else { bytes.append(contentsOf: "\(value)".utf8) }
    }

    func appendString(_ string: String) { JSONText.appendString(string, to: &bytes) }
}

/// The encoder a value writes itself through; `depth` is how many containers enclose it.
private final class StreamEncoder: Encoder {
    let stream: JSONStream
    let depth: Int
    let codingPath: [CodingKey]
    let userInfo: [CodingUserInfoKey: Any] = [:]

    init(stream: JSONStream, depth: Int, codingPath: [CodingKey]) {
        self.stream = stream
        self.depth = depth
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let frame = stream.open(.object, depth: depth, owner: ObjectIdentifier(self))
        return KeyedEncodingContainer(KeyedWriter<Key>(stream: stream, depth: depth + 1, frame: frame, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        let frame = stream.open(.array, depth: depth, owner: ObjectIdentifier(self))
        return ArrayWriter(stream: stream, depth: depth + 1, frame: frame, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleValueWriter(encoder: self) }
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let stream: JSONStream
    let depth: Int
    let frame: Int
    let codingPath: [CodingKey]

    private func member(_ key: Key) { stream.beginMember(depth: depth, frame: frame, key: key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { member(key); stream.appendLiteral("null") }
    mutating func encode(_ value: Bool, forKey key: Key) throws { member(key); stream.appendLiteral(value ? "true" : "false") }
    mutating func encode(_ value: String, forKey key: Key) throws { member(key); stream.appendString(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { member(key); try stream.appendDouble(value, codingPath + [key]) }
    mutating func encode(_ value: Float, forKey key: Key) throws { member(key); try stream.appendDouble(Double(value), codingPath + [key]) }
    mutating func encode(_ value: Int, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { member(key); stream.appendInteger(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        member(key)
        try stream.encodeValue(value, depth: depth, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        member(key)
        return StreamEncoder(stream: stream, depth: depth, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        member(key)
        return StreamEncoder(stream: stream, depth: depth, codingPath: codingPath + [key]).unkeyedContainer()
    }

    // A super encoder may be written to after later keys: not something a stream can follow.
    mutating func superEncoder() -> Encoder {
        stream.unsupported = true
        return StreamEncoder(stream: stream, depth: depth, codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> Encoder {
        stream.unsupported = true
        return StreamEncoder(stream: stream, depth: depth, codingPath: codingPath + [key])
    }
}

private struct IndexKey: CodingKey {
    let intValue: Int?
    let stringValue: String
    init(_ index: Int) {
        intValue = index
        stringValue = "Index \(index)"
    }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.init(intValue) }
}

private struct ArrayWriter: UnkeyedEncodingContainer {
    let stream: JSONStream
    let depth: Int
    let frame: Int
    let codingPath: [CodingKey]
    private(set) var count = 0

    init(stream: JSONStream, depth: Int, frame: Int, codingPath: [CodingKey]) {
        self.stream = stream
        self.depth = depth
        self.frame = frame
        self.codingPath = codingPath
    }

    private mutating func element() -> [CodingKey] {
        stream.beginMember(depth: depth, frame: frame, key: nil)
        count += 1
        return codingPath + [IndexKey(count - 1)]
    }

    mutating func encodeNil() throws { _ = element(); stream.appendLiteral("null") }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = element()
        try stream.encodeValue(value, depth: depth, codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = element()
        return StreamEncoder(stream: stream, depth: depth, codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let path = element()
        return StreamEncoder(stream: stream, depth: depth, codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder {
        stream.unsupported = true
        return StreamEncoder(stream: stream, depth: depth, codingPath: codingPath)
    }
}

private struct SingleValueWriter: SingleValueEncodingContainer {
    let encoder: StreamEncoder
    var codingPath: [CodingKey] { encoder.codingPath }
    private var stream: JSONStream { encoder.stream }

    mutating func encodeNil() throws { stream.appendLiteral("null") }
    mutating func encode(_ value: Bool) throws { stream.appendLiteral(value ? "true" : "false") }
    mutating func encode(_ value: String) throws { stream.appendString(value) }
    mutating func encode(_ value: Double) throws { try stream.appendDouble(value, codingPath) }
    mutating func encode(_ value: Float) throws { try stream.appendDouble(Double(value), codingPath) }
    mutating func encode(_ value: Int) throws { stream.appendInteger(value) }
    mutating func encode(_ value: Int8) throws { stream.appendInteger(value) }
    mutating func encode(_ value: Int16) throws { stream.appendInteger(value) }
    mutating func encode(_ value: Int32) throws { stream.appendInteger(value) }
    mutating func encode(_ value: Int64) throws { stream.appendInteger(value) }
    mutating func encode(_ value: UInt) throws { stream.appendInteger(value) }
    mutating func encode(_ value: UInt8) throws { stream.appendInteger(value) }
    mutating func encode(_ value: UInt16) throws { stream.appendInteger(value) }
    mutating func encode(_ value: UInt32) throws { stream.appendInteger(value) }
    mutating func encode(_ value: UInt64) throws { stream.appendInteger(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try stream.encodeValue(value, depth: encoder.depth, codingPath: codingPath) }
}
