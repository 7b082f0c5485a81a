import Foundation

/// What is read of a frame without its payload's type: a request's `op` and the ids its `data`
/// names, or a reply's outcome. For a log line about a refused request, whether a request may be
/// sent to another instance, and the HTTP status of a reply.
///
/// It never throws: a member missing or of another type reads as nil, and bytes that are not one
/// JSON object have no head. A service reads a request it serves with `RequestHead`, strictly.
public struct FrameHead: Sendable {
    private let members: [String: JSONValue]

    /// Nil unless `frame` is one JSON object.
    public init?(_ frame: Data) {
        guard case .object(let members)? = try? WireJSON.decode(JSONValue.self, from: frame) else { return nil }
        self.members = members
    }

    /// A request's `op`.
    public var op: String? { members["op"]?.stringValue }

    /// A reply's `ok`.
    public var ok: Bool? { members["ok"]?.boolValue }

    /// A failed reply's `error.code`; nil for none, or one this version does not know.
    public var errorCode: ErrorCode? { members["error"]?["code"]?.stringValue.flatMap(ErrorCode.init(rawValue:)) }

    /// A string member of the frame itself (a body that is a request's `data`).
    public func string(_ name: String) -> String? { members[name]?.stringValue }

    /// A string member of the frame's `data` object (`id`, `userId`).
    public func dataString(_ name: String) -> String? { members["data"]?[name]?.stringValue }
}

extension Reply {
    /// The `data` member of a success frame exactly as sent, when the frame has the services' own
    /// layout: the common reply, read without decoding it.
    public static func dataBytes(of frame: Data) -> Data? {
        let prefix = Data(#"{"v":1,"ok":true,"data":"#.utf8)
        guard frame.count > prefix.count, frame.starts(with: prefix), frame.last == UInt8(ascii: "}") else { return nil }
        let inner = frame.subdata(in: (frame.startIndex + prefix.count)..<(frame.endIndex - 1))
        return JSONSyntax.isValue(inner) ? inner : nil
    }
}
