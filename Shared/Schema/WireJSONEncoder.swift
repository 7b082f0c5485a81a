import Foundation

/// Encodes wire values to compact JSON, keys in the order the type encodes them.
///
/// Foundation's JSONEncoder costs ~15 µs for one event envelope on Linux, most of a `session.log`'s
/// budget; this one builds a small tree of boxes and writes it out in one pass. Any `Encodable`
/// works; strings are escaped as RFC 8259 requires, slashes are left alone, non-finite numbers throw.
public enum WireJSON {
    public static func encode<Value: Encodable>(_ value: Value) throws -> Data {
        let encoder = TreeEncoder(codingPath: [])
        try value.encode(to: encoder)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        (encoder.root ?? .raw(Array("{}".utf8))).write(to: &bytes)
        return Data(bytes)
    }
}

private enum Box {
    case raw([UInt8])
    case object(ObjectBox)
    case array(ArrayBox)

    func write(to bytes: inout [UInt8]) {
        switch self {
        case .raw(let raw):
            bytes.append(contentsOf: raw)
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (index, entry) in object.entries.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                JSONText.appendString(entry.key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                entry.value.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        case .array(let array):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in array.elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.write(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        }
    }
}

private final class ObjectBox {
    var entries: [(key: String, value: Box)] = []

    func set(_ key: String, _ value: Box) {
        if let index = entries.firstIndex(where: { $0.key == key }) { entries[index].value = value } else { entries.append((key, value)) }
    }
}

private final class ArrayBox {
    var elements: [Box] = []
}

enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

private final class TreeEncoder: Encoder {
    let codingPath: [CodingKey]
    let userInfo: [CodingUserInfoKey: Any] = [:]
    var root: Box?

    init(codingPath: [CodingKey]) { self.codingPath = codingPath }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // A type may ask twice (an occurrence and the fields beside it): both write into one object.
        if case .object(let object) = root { return KeyedEncodingContainer(KeyedWriter(object: object, codingPath: codingPath)) }
        let object = ObjectBox()
        root = .object(object)
        return KeyedEncodingContainer(KeyedWriter(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        if case .array(let array) = root { return ArrayWriter(array: array, codingPath: codingPath) }
        let array = ArrayBox()
        root = .array(array)
        return ArrayWriter(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleValueWriter(encoder: self) }

    /// Encodes a nested value: primitives directly, anything else through its own `encode(to:)`.
    static func box<T: Encodable>(_ value: T, at codingPath: [CodingKey]) throws -> Box {
        // Metatype comparisons, not `as?` casts: a chain of failed dynamic casts costs more than the encoding.
        if T.self == String.self { return string(value as! String) }
        if T.self == Int.self { return integer(value as! Int) }
        if T.self == Int64.self { return integer(value as! Int64) }
        if T.self == Bool.self { return .raw(Array(((value as! Bool) ? "true" : "false").utf8)) }
        if T.self == Double.self { return try double(value as! Double, codingPath) }
        let encoder = TreeEncoder(codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.root ?? .raw(Array("{}".utf8))
    }

    static func string(_ text: String) -> Box {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        JSONText.appendString(text, to: &bytes)
        return .raw(bytes)
    }

    static func double(_ value: Double, _ codingPath: [CodingKey]) throws -> Box {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: codingPath, debugDescription: "JSON has no \(value)"))
        }
        if value.rounded() == value, abs(value) < 1e15 { return .raw(Array(String(Int64(value)).utf8)) }
        return .raw(Array("\(value)".utf8))
    }

    static func integer<T: BinaryInteger>(_ value: T) -> Box { .raw(Array(String(value).utf8)) }
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: ObjectBox
    let codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws { object.set(key.stringValue, .raw(Array("null".utf8))) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { object.set(key.stringValue, .raw(Array((value ? "true" : "false").utf8))) }
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { object.set(key.stringValue, try TreeEncoder.double(value, codingPath + [key])) }
    mutating func encode(_ value: Float, forKey key: Key) throws { object.set(key.stringValue, try TreeEncoder.double(Double(value), codingPath + [key])) }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.set(key.stringValue, TreeEncoder.integer(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.set(key.stringValue, try TreeEncoder.box(value, at: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        object.set(key.stringValue, .object(nested))
        return KeyedEncodingContainer(KeyedWriter<NestedKey>(object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let nested = ArrayBox()
        object.set(key.stringValue, .array(nested))
        return ArrayWriter(array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> Encoder { DeferredEncoder(codingPath: codingPath) { [object] in object.set("super", $0) } }
    mutating func superEncoder(forKey key: Key) -> Encoder { DeferredEncoder(codingPath: codingPath + [key]) { [object] in object.set(key.stringValue, $0) } }
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
    let array: ArrayBox
    let codingPath: [CodingKey]
    var count: Int { array.elements.count }

    mutating func encodeNil() throws { array.elements.append(.raw(Array("null".utf8))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        array.elements.append(try TreeEncoder.box(value, at: codingPath + [IndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(KeyedWriter<NestedKey>(object: nested, codingPath: codingPath + [IndexKey(count - 1)]))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let nested = ArrayBox()
        array.elements.append(.array(nested))
        return ArrayWriter(array: nested, codingPath: codingPath + [IndexKey(count - 1)])
    }

    mutating func superEncoder() -> Encoder {
        let index = count
        array.elements.append(.raw(Array("null".utf8)))
        return DeferredEncoder(codingPath: codingPath + [IndexKey(index)]) { [array] in array.elements[index] = $0 }
    }
}

private struct SingleValueWriter: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    var codingPath: [CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.root = .raw(Array("null".utf8)) }
    mutating func encode(_ value: Bool) throws { encoder.root = .raw(Array((value ? "true" : "false").utf8)) }
    mutating func encode(_ value: String) throws { encoder.root = TreeEncoder.string(value) }
    mutating func encode(_ value: Double) throws { encoder.root = try TreeEncoder.double(value, codingPath) }
    mutating func encode(_ value: Float) throws { encoder.root = try TreeEncoder.double(Double(value), codingPath) }
    mutating func encode(_ value: Int) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: Int8) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: Int16) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: Int32) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: Int64) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: UInt) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: UInt8) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: UInt16) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: UInt32) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode(_ value: UInt64) throws { encoder.root = TreeEncoder.integer(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { encoder.root = try TreeEncoder.box(value, at: codingPath) }
}

/// A super-encoder: whatever is encoded into it is stored where it belongs once asked for.
private final class DeferredEncoder: Encoder {
    let codingPath: [CodingKey]
    let userInfo: [CodingUserInfoKey: Any] = [:]
    private let inner: TreeEncoder
    private let store: (Box) -> Void

    init(codingPath: [CodingKey], store: @escaping (Box) -> Void) {
        self.codingPath = codingPath
        inner = TreeEncoder(codingPath: codingPath)
        self.store = store
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        defer { if let root = inner.root { store(root) } }
        return inner.container(keyedBy: type)
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        defer { if let root = inner.root { store(root) } }
        return inner.unkeyedContainer()
    }

    func singleValueContainer() -> SingleValueEncodingContainer { DeferredSingleValue(encoder: self) }

    fileprivate func stored(_ box: Box) { store(box) }

    private struct DeferredSingleValue: SingleValueEncodingContainer {
        let encoder: DeferredEncoder
        var codingPath: [CodingKey] { encoder.codingPath }
        func set(_ box: Box) { encoder.stored(box) }
        mutating func encodeNil() throws { set(.raw(Array("null".utf8))) }
        mutating func encode(_ value: Bool) throws { set(.raw(Array((value ? "true" : "false").utf8))) }
        mutating func encode(_ value: String) throws { set(TreeEncoder.string(value)) }
        mutating func encode(_ value: Double) throws { set(try TreeEncoder.double(value, codingPath)) }
        mutating func encode(_ value: Float) throws { set(try TreeEncoder.double(Double(value), codingPath)) }
        mutating func encode(_ value: Int) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: Int8) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: Int16) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: Int32) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: Int64) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: UInt) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: UInt8) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: UInt16) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: UInt32) throws { set(TreeEncoder.integer(value)) }
        mutating func encode(_ value: UInt64) throws { set(TreeEncoder.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws { set(try TreeEncoder.box(value, at: codingPath)) }
    }
}
