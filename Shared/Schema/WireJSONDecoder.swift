import Foundation

extension WireJSON {
    /// Decodes `type` from JSON bytes: a lean pass for the usual case, Foundation's JSONDecoder for
    /// anything else.
    ///
    /// Foundation's decoder was a large part of a `session.log`'s work (decision
    /// [0009](../../docs/decisions/0009-hand-written-json-codec.md)). This one parses the bytes into a small tree and hands it to the type's `init(from:)`. It takes
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
    private static func withRoot<Value>(of bytes: UnsafeRawBufferPointer, _ read: (JSONNode) -> Value?) -> Value? {
        let text = bytes.bindMemory(to: UInt8.self)
        guard let tokens = JSONDocument.parse(text) else { return nil }
        return tokens.withUnsafeBufferPointer { tokens in
            let document = JSONDocument(bytes: text, tokens: tokens)
            return withExtendedLifetime(document) { read(JSONNode(document: document, index: 0)) }
        }
    }
}

/// A request payload that reads its members itself, without `Decodable`'s containers, whose code
/// runs cold in a loop that sleeps between requests (`StreakGetRequest`). `init(members:)`
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
    let object: JSONNode

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
struct NotLean: Error {}
