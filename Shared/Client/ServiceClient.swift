import Foundation
import LHTSchema
import ZeroMQ

/// A request/reply client for one service's api, typed by the catalog's ops.
///
/// Lazy Pirate (zguide ch. 4): on a timeout the socket is thrown away and reopened, so a late reply
/// can never be taken for the next request's. The request then goes to the next instance
/// (`Instances`) while tries are left, when that is safe (`Resend`): one that would be done twice
/// goes again only if it never left this client, else it fails as "may have been done". It is not
/// resent to the same instance either: ZeroMQ does not tell whether a silent peer got it.
public final class ServiceClient {
    public private(set) var instances: Instances
    private let context: Context
    private let credentials: CurveCredentials?
    private var connection: InstanceConnection?
    /// How the last request ended.
    public private(set) var lastCall = LastCall.answered(tries: 0)

    public enum LastCall: Sendable, Equatable {
        /// Its reply came on the `tries`th try.
        case answered(tries: Int)
        /// No instance answered.
        case unanswered
        /// It reached the instance at `endpoint`, which did not answer: it may have been carried out,
        /// so it was not sent to another instance (`Resend.onlyIfNeverSent`).
        case mayHaveBeenDone(endpoint: String)
    }

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

    private func connected() throws -> InstanceConnection {
        if let connection { return connection }
        let connection = try InstanceConnection(context: context, endpoint: instances.endpoint, credentials: credentials)
        self.connection = connection
        return connection
    }

    /// Sends one request frame and waits up to `timeoutMilliseconds` per try for its reply frame.
    /// Nil when the service did not answer (or the transport failed) on any try; `lastCall` says which.
    public func exchange(_ requestFrame: Data, timeoutMilliseconds: Int, tries: Int = 1) -> Data? {
        var resend: Resend?
        for attempt in 1...instances.tries(tries) {
            let index = instances.current
            let outcome = exchangeOnce(requestFrame, timeoutMilliseconds: timeoutMilliseconds)
            if case .reply(let reply) = outcome {
                lastCall = .answered(tries: attempt)
                return reply
            }
            instances.unanswered(at: index)
            // Read only now: an answered request never pays for it.
            resend = resend ?? Resend.of(requestFrame: requestFrame)
            if case .unanswered(mayHaveArrived: true) = outcome, resend == .onlyIfNeverSent {
                lastCall = .mayHaveBeenDone(endpoint: instances.endpoints[index])
                return nil
            }
        }
        lastCall = .unanswered
        return nil
    }

    private enum Try {
        case reply(Data)
        case unanswered(mayHaveArrived: Bool)
    }

    private func exchangeOnce(_ requestFrame: Data, timeoutMilliseconds: Int) -> Try {
        var queued = false
        do {
            let socket = try connected().socket
            // Never a blocking send: a handshake refused just before it (a key not let in yet) can
            // leave the DEALER without a peer, and a blocking send would wait for one forever.
            queued = try socket.send(multipart: [Data(), requestFrame], dontWait: true)
            let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
            while queued {
                let remaining = Int(deadline.timeIntervalSinceNow * 1000)
                guard remaining > 0, try Poller.readable([socket], timeoutMilliseconds: remaining)[0] else { break }
                if let frames = try socket.receiveMultipart(dontWait: true), let body = frames.last { return .reply(body) }
            }
        } catch {
            // Treated like a timeout: the socket is replaced below.
        }
        let mayHaveArrived = queued && (connection?.wasEverConnected() ?? true)
        connection?.close()
        connection = nil
        return .unanswered(mayHaveArrived: mayHaveArrived)
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
        return (value, Reply.dataBytes(of: reply) ?? ((try? WireJSON.encode(value)) ?? Data("null".utf8)))
    }

    private func exchange<Input, Output>(_ op: Op<Input, Output>, _ request: Input, timeoutMilliseconds: Int,
                                         tries: Int) throws(WireError) -> Data {
        guard let reply = exchange(try Self.requestFrame(op, request), timeoutMilliseconds: timeoutMilliseconds, tries: tries) else {
            if case .mayHaveBeenDone(let endpoint) = lastCall {
                throw Self.mayHaveBeenDone(op, at: endpoint, timeoutMilliseconds: timeoutMilliseconds)
            }
            throw Self.noAnswer(op, from: instances, tries: instances.tries(tries), timeoutMilliseconds: timeoutMilliseconds)
        }
        return reply
    }

    /// `unavailable`: no instance answered `op` on any try.
    public static func noAnswer<Input, Output>(_ op: Op<Input, Output>, from instances: Instances, tries: Int,
                                               timeoutMilliseconds: Int) -> WireError {
        WireError(.unavailable, "\(instances) did not answer \(op.name) within \(tries) × \(timeoutMilliseconds) ms")
    }

    /// `unavailable`: `op` reached the instance at `endpoint`, which did not answer, and doing it twice
    /// would do it twice: whether it was carried out is unknown.
    public static func mayHaveBeenDone<Input, Output>(_ op: Op<Input, Output>, at endpoint: String,
                                                      timeoutMilliseconds: Int) -> WireError {
        WireError(.unavailable, "\(endpoint) did not answer \(op.name) within \(timeoutMilliseconds) ms: it may have been carried out, "
                  + "so it was not sent to another instance (\(op.name) sent twice is done twice)")
    }

    /// The request frame of `op` with `request` as its data; a create without an id gets one of the
    /// client's making first (`ClientIdentifiable`), so that sending it again is safe.
    public static func requestFrame<Input, Output>(_ op: Op<Input, Output>, _ request: Input) throws(WireError) -> Data {
        let request = (request as? ClientIdentifiable)?.identified() as? Input ?? request
        do {
            return try WireJSON.encode(RequestFrame(op: op.name, data: request))
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
