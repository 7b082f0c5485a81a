import Foundation

/// Values on the hottest paths (the planner's decisions) write their JSON fields directly;
/// `WireJSON.encode` uses this instead of their `encode(to:)`, which must produce the same object
/// (a schema test checks they decode to the same value).
public protocol WireJSONWritable: Encodable {
    func writeFields(to object: inout JSONObjectWriter)
}

/// A value whose text form (its `description`) is written straight into a buffer, without making
/// a `String`: ids, instants, days and times in every event.
public protocol WritableText {
    /// The most bytes `write(into:)` writes.
    static var longestText: Int { get }
    /// Writes `description`'s bytes into `buffer` (at least `longestText` long) and returns how many.
    func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int
}

extension RecordID: WritableText {
    public static var longestText: Int { textLength }
}

extension Instant: WritableText {
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int { write(into: buffer, withMilliseconds: true) }
}

extension LocalDay: WritableText {}

extension LocalTime: WritableText {}

/// Writes one JSON object's members, in order, with strings escaped as the encoder does.
///
/// It writes into one malloc'd buffer that becomes the `Data` it returns, without a copy; an
/// `Array` paid a uniqueness and capacity check per byte run, several per member. Noncopyable, so
/// the buffer has exactly one owner.
public struct JSONObjectWriter: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int
    private var empty = true

    /// `capacity`: the bytes it will likely take, so that they are allocated once.
    public init(capacity: Int = 512) {
        self.capacity = max(capacity, 16)
        start = malloc(self.capacity)!.assumingMemoryBound(to: UInt8.self)
        start[0] = UInt8(ascii: "{")
        count = 1
    }

    deinit { free(start) }

    /// Lets `write` put at most `length` bytes at the end; it returns how many it wrote.
    private mutating func append(upTo length: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        if count + length > capacity {
            capacity = max(capacity * 2, count + length)
            start = realloc(start, capacity)!.assumingMemoryBound(to: UInt8.self)
        }
        count += write(start + count)
    }

    private mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        append(upTo: bytes.count) { destination in
            memcpy(destination, source, bytes.count)
            return bytes.count
        }
    }

    private mutating func key(_ key: StaticString) {
        let comma = !empty
        empty = false
        key.withUTF8Buffer { name in
            append(upTo: name.count + 4) { out in
                var index = 0
                if comma { out[0] = UInt8(ascii: ","); index = 1 }
                out[index] = UInt8(ascii: "\"")
                if let base = name.baseAddress { memcpy(out + index + 1, base, name.count) }
                out[index + 1 + name.count] = UInt8(ascii: "\"")
                out[index + 2 + name.count] = UInt8(ascii: ":")
                return index + 3 + name.count
            }
        }
    }

    /// A string written by `write` into at most `capacity` bytes, quoted; for values whose text
    /// needs no escape, written without making a `String` first.
    private mutating func quoted(capacity: Int, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Int) {
        append(upTo: capacity + 2) { out in
            out[0] = UInt8(ascii: "\"")
            let length = write(UnsafeMutableBufferPointer(start: out + 1, count: capacity))
            out[length + 1] = UInt8(ascii: "\"")
            return length + 2
        }
    }

    private mutating func string(_ value: String) {
        var contiguous = value  // withUTF8 may make the string native, so it takes a var
        contiguous.withUTF8 { text in
            if text.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
                quoted(capacity: text.count) { out in
                    if let base = text.baseAddress { memcpy(out.baseAddress!, base, text.count) }
                    return text.count
                }
            } else {
                var escaped: [UInt8] = []
                JSONText.appendString(value, to: &escaped)
                escaped.withUnsafeBytes { append($0) }
            }
        }
    }

    private mutating func literal(_ text: StaticString) {
        text.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
    }

    /// As `field(name, value.description)`.
    public mutating func field(_ name: StaticString, _ value: some WritableText) {
        key(name)
        quoted(capacity: type(of: value).longestText) { value.write(into: $0) }
    }

    /// nil is written as null.
    public mutating func field(_ name: StaticString, _ value: (some WritableText)?) {
        if let value { field(name, value) } else { field(name, nil as String?) }
    }

    /// nil leaves the member out, as `encodeIfPresent` does.
    public mutating func fieldIfPresent(_ name: StaticString, _ value: (some WritableText)?) {
        if let value { field(name, value) }
    }

    public mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    /// nil is written as null.
    public mutating func field(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { string(value) } else { literal("null") }
    }

    /// nil leaves the member out, as `encodeIfPresent` does.
    public mutating func fieldIfPresent(_ name: StaticString, _ value: String?) {
        if let value { field(name, value) }
    }

    public mutating func field(_ name: StaticString, _ value: Int64) {
        key(name)
        append(upTo: 20) { out in
            var length = value < 0 ? 1 : 0
            var rest = value.magnitude
            repeat { length += 1; rest /= 10 } while rest > 0
            var index = length
            rest = value.magnitude
            repeat {
                index -= 1
                out[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            if value < 0 { out[0] = UInt8(ascii: "-") }
            return length
        }
    }

    public mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        literal(value ? "true" : "false")
    }

    public mutating func field(_ name: StaticString, strings: [String]) {
        key(name)
        literal("[")
        for (index, string) in strings.enumerated() {
            if index > 0 { literal(",") }
            self.string(string)
        }
        literal("]")
    }

    /// A member whose value is JSON already.
    public mutating func field(_ name: StaticString, json: Data) {
        key(name)
        json.withUnsafeBytes { append($0) }
    }

    /// A member whose value is the object `value` writes, written in place.
    public mutating func field(_ name: StaticString, object value: some WireJSONWritable) {
        key(name)
        literal("{")
        empty = true
        value.writeFields(to: &self)
        literal("}")
        empty = false
    }

    /// The object's bytes; the buffer becomes the `Data`'s, freed with it.
    public consuming func finished() -> Data {
        literal("}")
        let data = Data(bytesNoCopy: start, count: count, deallocator: .free)
        discard self
        return data
    }
}

enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    /// Runs of bytes that need no escape are copied whole: most strings are one such run.
    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var copied = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[copied..<index]))
                appendEscaped(byte, to: &bytes)
                copied = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[copied...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ byte: UInt8, to bytes: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        default: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }
}
