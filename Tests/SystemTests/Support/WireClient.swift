import Foundation
import LHTClient
import LHTSchema
import ZeroMQ

/// A test's client for one service api: a DEALER speaking REQ-style, raw JSON in and out,
/// with a deadline on every call so a broken service fails the test instead of hanging it.
final class WireClient {
    let socket: Socket

    /// `credentials`: CurveZMQ to a service started with `--keys` (nil: plaintext).
    init(_ endpoint: String, context: Context, credentials: CurveCredentials? = nil) throws {
        socket = try Socket(context, .dealer)
        try socket.secure(with: credentials)
        try socket.connect(endpoint)
    }

    /// Sends a raw request frame and returns the raw reply frame.
    func raw(_ frame: Data, timeoutMilliseconds: Int32 = 10_000) throws -> Data {
        // Not a blocking send: a handshake refused just before it can leave the socket without a peer.
        guard try socket.send(multipart: [Data(), frame], dontWait: true) else { throw HarnessError("no peer to send to (a refused handshake?)") }
        try socket.setReceiveTimeout(milliseconds: timeoutMilliseconds)
        guard let frames = try socket.receiveMultipart(), let body = frames.last else {
            throw HarnessError("no reply within \(timeoutMilliseconds) ms")
        }
        return body
    }

    /// Sends `{"v":1,"op":op,"data":data}` and returns the whole reply as JSON.
    func call(_ op: String, _ data: [String: Any] = [:]) throws -> JSONValue {
        let frame = try JSONSerialization.data(withJSONObject: ["v": 1, "op": op, "data": data])
        return try JSONDecoder().decode(JSONValue.self, from: raw(frame))
    }

    /// Calls and expects success; returns the reply's `data`.
    func ok(_ op: String, _ data: [String: Any] = [:]) throws -> JSONValue {
        let reply = try call(op, data)
        guard reply["ok"]?.boolValue == true, let payload = reply["data"] else {
            throw HarnessError("\(op) failed: \(String(describing: reply).prefix(400))")
        }
        return payload
    }

    /// Every event of the service's log, page by page (`events.since`).
    func allEvents() throws -> [JSONValue] {
        var events: [JSONValue] = [], after: Int64 = 0
        while true {
            let page = try ok("events.since", ["after": after, "limit": 1000])["events"]?.arrayValue ?? []
            guard let last = page.last?["seq"]?.intValue else { return events }
            events += page
            after = last
        }
    }

    /// Calls and expects failure; returns `(code, field)`.
    func failure(_ op: String, _ data: [String: Any] = [:]) throws -> (code: String, field: String?) {
        let reply = try call(op, data)
        guard reply["ok"]?.boolValue == false, let code = reply["error"]?["code"]?.stringValue else {
            throw HarnessError("\(op) was expected to fail: \(String(describing: reply).prefix(400))")
        }
        return (code, reply["error"]?["field"]?.stringValue)
    }
}

/// A test's subscriber: collects `[topic, envelope]` messages with a deadline.
final class EventSubscriber {
    let socket: Socket
    /// Heartbeats are kept only for a subscriber whose prefixes ask for them.
    private let keepsHeartbeats: Bool
    /// Messages that came while waiting for the subscription to reach the publisher.
    private var early: [[Data]]

    init(_ endpoint: String, context: Context, prefixes: [String] = [""]) throws {
        socket = try Socket(context, .sub)
        for prefix in prefixes { try socket.subscribe(prefix) }
        keepsHeartbeats = prefixes.contains { Heartbeat.topic.hasPrefix($0) }
        try socket.connect(endpoint)
        early = try socket.awaitSubscribed()
    }

    /// Receives until `count` messages arrived or `timeout` passed.
    func receive(_ count: Int, timeout: TimeInterval = 5) throws -> [(topic: String, envelope: JSONValue)] {
        var received: [(String, JSONValue)] = []
        let deadline = Date().addingTimeInterval(timeout)
        while received.count < count {
            let frames: [Data]
            if !early.isEmpty {
                frames = early.removeFirst()
            } else {
                let remaining = Int32(deadline.timeIntervalSinceNow * 1000)
                guard remaining > 0 else { break }
                try socket.setReceiveTimeout(milliseconds: remaining)
                guard let next = try socket.receiveMultipart() else { break }
                frames = next
            }
            let topic = String(decoding: frames[0], as: UTF8.self)
            if topic == Heartbeat.topic && !keepsHeartbeats { continue }
            received.append((topic, try JSONDecoder().decode(JSONValue.self, from: frames[1])))
        }
        return received
    }
}

extension JSONValue {
    subscript(index: Int) -> JSONValue? {
        if case .array(let items) = self, items.indices.contains(index) { return items[index] }
        return nil
    }

    var arrayValue: [JSONValue] {
        if case .array(let items) = self { return items }
        return []
    }
}
