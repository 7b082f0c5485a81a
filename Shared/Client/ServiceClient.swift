import Foundation
import LHTSchema
import ZeroMQ

/// The instances of one service a client may ask (PROTOCOL "Cluster": several endpoints in one flag).
/// A request goes to the instance that answered last; one left unanswered goes again to the next in
/// the list, and so does every request after it, so a dead instance costs one timeout, not one per request.
public struct Instances: Sendable, CustomStringConvertible {
    public let endpoints: [String]
    /// The index of the instance the next request goes to.
    public private(set) var current = 0

    public init(_ endpoints: [String]) {
        precondition(!endpoints.isEmpty, "a service has at least one endpoint")
        self.endpoints = endpoints
    }

    public var endpoint: String { endpoints[current] }

    /// All of them as the flag names them, for messages.
    public var description: String { endpoints.joined(separator: ",") }

    /// The tries of a request meant to be tried `tries` times: at least one per instance.
    public func tries(_ tries: Int) -> Int { max(1, tries, endpoints.count) }

    /// The instance at `index` did not answer: move on from it, unless another request already did.
    public mutating func unanswered(at index: Int) {
        if index == current { current = (current + 1) % endpoints.count }
    }
}

/// A request/reply client for one service's api, typed by the catalog's ops.
///
/// Lazy Pirate (zguide ch. 4): on a timeout the socket is thrown away and reopened, so a late reply
/// can never be taken for the next request's; the request is sent again on the new socket, to the
/// next instance (`Instances`), while tries are left. Only idempotent requests should be retried
/// (every op with an id is, by PROTOCOL).
public final class ServiceClient {
    public private(set) var instances: Instances
    private let context: Context
    private let credentials: CurveCredentials?
    private var socket: Socket?

    /// `endpoints`: every instance of the service; `credentials`: speak CurveZMQ to a service started
    /// with `--keys` (nil: plaintext).
    public init(context: Context, endpoints: [String], credentials: CurveCredentials? = nil) {
        self.context = context
        instances = Instances(endpoints)
        self.credentials = credentials
    }

    public convenience init(context: Context, endpoint: String, credentials: CurveCredentials? = nil) {
        self.init(context: context, endpoints: [endpoint], credentials: credentials)
    }

    private func connected() throws -> Socket {
        if let socket { return socket }
        let socket = try Socket(context, .dealer)
        try socket.secure(with: credentials)
        try socket.connect(instances.endpoint)
        self.socket = socket
        return socket
    }

    /// Sends one request frame and waits up to `timeoutMilliseconds` per try for its reply frame.
    /// Nil when the service did not answer (or the transport failed) on any try.
    public func exchange(_ requestFrame: Data, timeoutMilliseconds: Int, tries: Int = 1) -> Data? {
        for _ in 0..<instances.tries(tries) {
            if let reply = exchangeOnce(requestFrame, timeoutMilliseconds: timeoutMilliseconds) { return reply }
            instances.unanswered(at: instances.current)
        }
        return nil
    }

    private func exchangeOnce(_ requestFrame: Data, timeoutMilliseconds: Int) -> Data? {
        do {
            let socket = try connected()
            try socket.send(multipart: [Data(), requestFrame])
            let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
            while true {
                let remaining = Int(deadline.timeIntervalSinceNow * 1000)
                guard remaining > 0, try Poller.readable([socket], timeoutMilliseconds: remaining)[0] else { break }
                if let frames = try socket.receiveMultipart(dontWait: true), let body = frames.last { return body }
            }
        } catch {
            // Treated like a timeout: the socket is replaced below.
        }
        socket = nil
        return nil
    }

    /// Calls `op` and decodes its reply; a refusal is the service's `WireError`, no answer is `unavailable`.
    public func call<Input, Output>(_ op: Op<Input, Output>, _ request: Input, timeoutMilliseconds: Int,
                                    tries: Int = 1) throws(WireError) -> Output {
        try Self.decodeReply(op, exchange(op, request, timeoutMilliseconds: timeoutMilliseconds, tries: tries), from: instances.endpoint)
    }

    /// As `call`, with the reply's `data` bytes exactly as the service sent them (for `--json` output).
    public func callWithData<Input, Output>(_ op: Op<Input, Output>, _ request: Input, timeoutMilliseconds: Int,
                                            tries: Int = 1) throws(WireError) -> (value: Output, data: Data) {
        let reply = try exchange(op, request, timeoutMilliseconds: timeoutMilliseconds, tries: tries)
        let value = try Self.decodeReply(op, reply, from: instances.endpoint)
        return (value, Reply.dataBytes(of: reply) ?? ((try? wireEncoder().encode(value)) ?? Data("null".utf8)))
    }

    private func exchange<Input, Output>(_ op: Op<Input, Output>, _ request: Input, timeoutMilliseconds: Int,
                                         tries: Int) throws(WireError) -> Data {
        guard let reply = exchange(try Self.requestFrame(op, request), timeoutMilliseconds: timeoutMilliseconds, tries: tries) else {
            throw Self.noAnswer(op, from: instances, tries: instances.tries(tries), timeoutMilliseconds: timeoutMilliseconds)
        }
        return reply
    }

    /// `unavailable`: no instance answered `op` on any try.
    public static func noAnswer<Input, Output>(_ op: Op<Input, Output>, from instances: Instances, tries: Int,
                                               timeoutMilliseconds: Int) -> WireError {
        WireError(.unavailable, "\(instances) did not answer \(op.name) within \(tries) × \(timeoutMilliseconds) ms")
    }

    /// The request frame of `op` with `request` as its data.
    public static func requestFrame<Input, Output>(_ op: Op<Input, Output>, _ request: Input) throws(WireError) -> Data {
        do {
            return try wireEncoder().encode(RequestFrame(op: op.name, data: request))
        } catch {
            throw WireError(.internal, "the \(op.name) request could not be encoded: \(error)")
        }
    }

    /// A reply frame to `op` from `endpoint`, decoded: its value, or the service's refusal.
    public static func decodeReply<Input, Output>(_ op: Op<Input, Output>, _ reply: Data,
                                                  from endpoint: String) throws(WireError) -> Output {
        let decoded: ReplyFrame<Output>
        do {
            decoded = try WireJSON.decode(ReplyFrame<Output>.self, from: reply)
        } catch {
            throw WireError(.internal, "\(endpoint) sent a reply to \(op.name) that cannot be read: \("\(error)".prefix(200))")
        }
        guard decoded.ok, let value = decoded.data else {
            throw decoded.error ?? WireError(.internal, "\(endpoint) replied to \(op.name) without data")
        }
        return value
    }
}

extension Reply {
    /// The `data` member of a success frame exactly as sent, when the frame has the services' own layout.
    public static func dataBytes(of frame: Data) -> Data? {
        let prefix = Data(#"{"v":1,"ok":true,"data":"#.utf8)
        guard frame.count > prefix.count, frame.starts(with: prefix), frame.last == UInt8(ascii: "}") else { return nil }
        let inner = frame.subdata(in: (frame.startIndex + prefix.count)..<(frame.endIndex - 1))
        return JSONSyntax.isValue(inner) ? inner : nil
    }
}
