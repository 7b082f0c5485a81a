import Foundation
import LHTClient
import LHTSchema

/// The pure half of `POST /v1/<op>`: which service owns an op, the request frame the gateway sends
/// for an HTTP body, and the HTTP status of a reply (PROTOCOL "HTTP gateway", Ops).
public enum Forwarding {
    /// The largest body taken: the api's own frame limit.
    public static let largestBody = 1 << 20

    /// The service that serves `op`; nil for an op the gateway does not forward (unknown, or
    /// `health`/`events.since`, which every service answers and the event stream replaces).
    public static func service(of op: String) -> ServiceName? {
        Ops.all.first { $0.name == op }?.service
    }

    /// The request frame for `body` (the op's `data`, "" for none) acting `as` the caller. A body
    /// that is an object without `userId` gets `user`'s. Nil when the body is not one JSON value.
    public static func requestFrame(op: String, body: Data, as user: UserID?) -> Data? {
        var data = body
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { data = Data("{}".utf8) }
        guard JSONSyntax.isValue(data) else { return nil }
        if let user, let object = TopLevelObject(data), !object.namesUser {
            let brace = object.brace
            let member = Data("\"userId\":\(quoted(user.rawValue))".utf8)
            data = data[..<(brace + 1)] + member + (object.isEmpty ? Data() : Data(",".utf8)) + data[(brace + 1)...]
        }
        var frame = Data("{\"v\":1,\"op\":\(quoted(op)),".utf8)
        if let user { frame += Data("\"as\":\(quoted(user.rawValue)),".utf8) }
        return frame + Data("\"data\":".utf8) + data + Data("}".utf8)
    }

    /// The `userId` a body names, for the gateway without keys (it acts for that user).
    public static func namedUser(in body: Data) -> UserID? {
        FrameHead(body)?.string("userId").flatMap(UserID.init)
    }

    /// The status a reply maps to, from its error code (200 for success, 500 for an unreadable reply).
    public static func status(of reply: Data) -> Int {
        // A success in the services' own layout needs no decoding: the common case.
        if Reply.dataBytes(of: reply) != nil { return 200 }
        guard let head = FrameHead(reply), let ok = head.ok else { return 500 }
        if ok { return 200 }
        return head.errorCode.map(status(of:)) ?? 500
    }

    public static func status(of code: ErrorCode) -> Int {
        switch code {
        case .badJSON, .unsupportedVersion, .invalidArgument: 400
        case .unknownOp, .notFound: 404
        case .conflict: 409
        case .unauthorized: 403
        case .unavailable: 503
        case .internal: 500
        }
    }

    /// `text` as a JSON string. Op names and user ids need no escapes, so they skip the encoder.
    static func quoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.utf8.allSatisfy { $0 < 0x80 && ($0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                                                                           || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)) }
        if plain { return "\"" + text + "\"" }
        return String(decoding: (try? WireJSON.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }
}
