import Foundation

/// The protocol version every request, reply and event carries.
public let wireVersion = 1

/// Error codes of PROTOCOL.md "Requests and replies".
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    case badJSON = "bad_json"
    case unsupportedVersion = "unsupported_version"
    case unknownOp = "unknown_op"
    case invalidArgument = "invalid_argument"
    case notFound = "not_found"
    case conflict
    case unauthorized
    case unavailable
    case `internal`
}

/// A failure a request ends in; `field` is a path from the request's root (`data.weekdays[2]`).
public struct WireError: Error, Codable, Sendable, Hashable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String
    public let field: String?

    public init(_ code: ErrorCode, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    public static func invalid(_ field: String, _ message: String) -> WireError {
        WireError(.invalidArgument, "\(field): \(message)", field: field)
    }

    public var description: String { field.map { "\(code.rawValue) (\($0)): \(message)" } ?? "\(code.rawValue): \(message)" }

    /// Turns a decoding failure into `invalid_argument` naming the field, with `prefix` as the path's root.
    public init(decoding error: Error, under prefix: String) {
        guard let error = error as? DecodingError else {
            self.init(.invalidArgument, "\(prefix): \(error)", field: prefix)
            return
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = WireError.path(prefix, context.codingPath + [key])
            self.init(.invalidArgument, "\(field) is required", field: field)
        case .valueNotFound(_, let context):
            let field = WireError.path(prefix, context.codingPath)
            self.init(.invalidArgument, "\(field) must not be null", field: field)
        case .typeMismatch(let type, let context):
            let field = WireError.path(prefix, context.codingPath)
            self.init(.invalidArgument, "\(field) must be \(WireError.describe(type))", field: field)
        case .dataCorrupted(let context):
            let field = WireError.path(prefix, context.codingPath)
            self.init(.invalidArgument, "\(field): \(context.debugDescription)", field: field)
        @unknown default:
            self.init(.invalidArgument, "\(prefix): \(error)", field: prefix)
        }
    }

    static func path(_ prefix: String, _ codingPath: [CodingKey]) -> String {
        codingPath.reduce(prefix) { path, key in
            if let index = key.intValue, key.stringValue == "Index \(index)" {
                return path + "[\(index)]"
            }
            return path.isEmpty ? key.stringValue : path + "." + key.stringValue
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type: "a whole number"
        case is Double.Type: "a number"
        case is [Any].Type: "an array"
        default: String(describing: type).contains("Array") ? "an array" : "an object"
        }
    }
}

/// What a service learns of a request frame before it knows which payload the op takes.
public struct RequestHead: Sendable {
    public let op: String
    /// False when the request left `data` out (allowed for ops without required fields).
    public let hasData: Bool
    /// `as`: the user the sender acts for; nil when the request does not say (or says null).
    public let actingFor: UserID?
    /// Where `data`'s value sits in the frame (byte offsets), so it is decoded without the envelope.
    let dataRange: Range<Int>?

    /// Checks UTF-8 and JSON object, then `v`, then `op`, in that order, as PROTOCOL.md lists them.
    /// One strict pass over the bytes finds the three members; only their values are decoded.
    public init(frame: Data) throws(WireError) {
        guard let members = JSONSyntax.object(frame) else { throw WireError(.badJSON, "the request must be a UTF-8 JSON object") }
        // The usual spellings are read in place; anything else (1.0, escapes) goes through JSONDecoder.
        let (versionIsOne, plainOp, dataIsNull) = frame.withUnsafeBytes { raw in
            let bytes = raw.assumingMemoryBound(to: UInt8.self)
            func value(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[range]) }
            let plainOp = members.op.map(value).flatMap { text -> String? in
                guard text.first == UInt8(ascii: "\""), !text.contains(UInt8(ascii: "\\")) else { return nil }
                return String(decoding: text.dropFirst().dropLast(), as: UTF8.self)
            }
            return (members.version.map { value($0).elementsEqual("1".utf8) } ?? false, plainOp,
                    members.data.map { value($0).elementsEqual("null".utf8) } ?? true)
        }
        func decoded<T: Decodable>(_ range: Range<Int>?, as type: T.Type) -> T? {
            range.flatMap { try? JSONDecoder().decode(T.self, from: Data(frame[(frame.startIndex + $0.lowerBound)..<(frame.startIndex + $0.upperBound)])) }
        }
        guard versionIsOne || decoded(members.version, as: Double.self) == Double(wireVersion) else {
            throw WireError(.unsupportedVersion, "v must be \(wireVersion)", field: "v")
        }
        guard let op = plainOp ?? decoded(members.op, as: String.self) else { throw WireError.invalid("op", "op is required and must be a string") }
        guard FreeText.isAllowed(op) else { throw WireError.invalid("op", "op must not contain U+0000") }
        self.op = op
        actingFor = try Self.actingFor(members.actingFor, in: frame)
        hasData = !dataIsNull
        dataRange = members.data
    }
}

extension RequestHead {
    /// Reads `as`: null or absent is nobody; anything but a valid userId is `invalid_argument` naming `as`.
    private static func actingFor(_ range: Range<Int>?, in frame: Data) throws(WireError) -> UserID? {
        guard let range else { return nil }
        let bytes = Data(frame[(frame.startIndex + range.lowerBound)..<(frame.startIndex + range.upperBound)])
        if bytes.elementsEqual("null".utf8) { return nil }
        guard let text = try? JSONDecoder().decode(String.self, from: bytes), let user = UserID(text) else {
            throw WireError.invalid("as", "as must be a userId: 1-64 of A-Z a-z 0-9 _ -")
        }
        return user
    }
}

/// Decodes the `data` of a request as `Payload`, reporting failures with `data.`-rooted paths.
public func decodeRequestData<Payload: Decodable>(_ type: Payload.Type, from frame: Data, head: RequestHead) throws(WireError) -> Payload {
    do {
        // Left out: the op's payload is read from an empty object, so a required field is named.
        guard head.hasData, let range = head.dataRange else { return try WireJSON.decode(Payload.self, from: Data("{}".utf8)) }
        return try WireJSON.decode(Payload.self, from: frame[(frame.startIndex + range.lowerBound)..<(frame.startIndex + range.upperBound)])
    } catch {
        throw WireError(decoding: error, under: "data")
    }
}

/// An op's request payload, as a service reads it from a request's `data` (`Op` requires it).
/// `decodeRequestData` unless the type reads its members itself (`WireJSONReadable`): such a type
/// implements `read` with `readRequestData`, so the generic code that serves an op calls the right
/// one through the conformance, with no lookup or cast for each request.
public protocol RequestPayload: Codable, Sendable {
    static func read(from frame: Data, head: RequestHead) throws(WireError) -> Self
}

extension RequestPayload {
    public static func read(from frame: Data, head: RequestHead) throws(WireError) -> Self {
        try decodeRequestData(Self.self, from: frame, head: head)
    }
}

/// As `decodeRequestData`, through the type's `init(members:)` when that takes the data.
func readRequestData<Payload: WireJSONReadable>(_ type: Payload.Type, from frame: Data, head: RequestHead) throws(WireError) -> Payload {
    if head.hasData, let range = head.dataRange,
       let value = WireJSON.leanRead(Payload.self, from: frame[(frame.startIndex + range.lowerBound)..<(frame.startIndex + range.upperBound)]) {
        return value
    }
    return try decodeRequestData(Payload.self, from: frame, head: head)
}

/// Reply frames. Success embeds the payload's JSON bytes as they are, so stored JSON is never re-encoded.
public enum Reply {
    /// Written into one buffer: growing a `Data` made from the prefix's UTF-8 view cost a runtime
    /// cast and a reallocation per reply.
    public static func success(rawData: Data) -> Data {
        var frame = JSONObjectWriter(capacity: 32 + rawData.count)
        frame.field("v", Int64(wireVersion))
        frame.field("ok", true)
        frame.field("data", json: rawData)
        return frame.finished()
    }

    public static func success<Payload: Encodable>(_ payload: Payload) throws -> Data {
        try success(rawData: WireJSON.encode(payload))
    }

    public static func failure(_ error: WireError) -> Data {
        struct Failure: Encodable { let v: Int; let ok: Bool; let error: WireError }
        // Encoding three strings cannot fail; the fallback keeps the reply well formed regardless.
        return (try? WireJSON.encode(Failure(v: wireVersion, ok: false, error: error)))
            ?? Data(#"{"v":1,"ok":false,"error":{"code":"internal","message":"reply could not be encoded"}}"#.utf8)
    }
}

/// A reply as a client reads it.
public struct ReplyFrame<Payload: Decodable>: Decodable {
    public let v: Int
    public let ok: Bool
    public let data: Payload?
    public let error: WireError?
}

/// A request as a client sends it.
public struct RequestFrame<Payload: Encodable>: Encodable {
    public let v: Int
    public let op: String
    public let data: Payload
    /// `as`: the user this request acts for (left out when nil).
    public let actingFor: UserID?

    public init(op: String, data: Payload, as actingFor: UserID? = nil) {
        v = wireVersion
        self.op = op
        self.data = data
        self.actingFor = actingFor
    }

    private enum CodingKeys: String, CodingKey { case v, op, data, actingFor = "as" }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(v, forKey: .v)
        try container.encode(op, forKey: .op)
        try container.encode(data, forKey: .data)
        try container.encodeIfPresent(actingFor?.rawValue, forKey: .actingFor)
    }
}

/// An empty payload, for ops without fields.
public struct NoFields: Codable, Sendable, Hashable {
    public init() {}
}
