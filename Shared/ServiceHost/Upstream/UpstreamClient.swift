import Foundation
import LHTClient
import LHTSchema
import ZeroMQ

/// Requests to another service's api that the loop never waits for (zguide: one thread owns a
/// socket for its whole life — here the loop's thread owns these DEALERs and polls them with its
/// other sockets).
///
/// `call` sends the request and returns at once; the reply is handled on a later loop turn, when
/// it arrives, by `then` — on the loop thread, like every handler. Each try has its own deadline,
/// checked every turn: Lazy Pirate (zguide ch. 4), a try that times out throws its socket away (so
/// a late reply can never be taken for another request's) and the next try goes out on a fresh
/// one, to the upstream's next instance (`Instances`); after the last, `then` gets `unavailable`.
/// A socket carries one request at a time, so a reply always belongs to the request sent on it.
///
/// Meant for work that runs while the loop serves: an op answered later (`handleDeferred`), an
/// `UpstreamFeed` catching up. Blocking calls (`ServiceClient`) remain right only before the loop
/// starts, for the start-up catch-up the ready line promises.
public final class UpstreamClient {
    public private(set) var instances: Instances
    private unowned let host: ServiceHost
    let credentials: CurveCredentials?
    /// Sockets to the current instance whose last exchange ended with a reply: connected, nothing in flight on them.
    private var idle: [Socket] = []

    /// A client for `upstream`'s api at `endpoints` (its instances), with this service's keys when it runs with keys.
    public init(host: ServiceHost, upstream: ServiceName, endpoints: [String]) throws {
        self.host = host
        instances = Instances(endpoints)
        credentials = try host.credentials(for: upstream)
    }

    /// Sends `op` and calls `then` on the loop thread with its reply, the upstream's refusal, or
    /// `unavailable` after `tries` (at least one per instance) × `timeoutMilliseconds` without an answer.
    public func call<Input, Output>(_ op: Op<Input, Output>, _ request: Input, timeoutMilliseconds: Int, tries: Int = 1,
                                    then: @escaping (Result<Output, WireError>) -> Void) {
        let frame: Data
        do {
            frame = try ServiceClient.requestFrame(op, request)
        } catch {
            then(.failure(error))
            return
        }
        let tries = instances.tries(tries)
        host.exchanges.start(Exchange(client: self, frame: frame, timeoutMilliseconds: timeoutMilliseconds, tries: tries) { [self] reply in
            guard let reply else {
                then(.failure(ServiceClient.noAnswer(op, from: instances, tries: tries, timeoutMilliseconds: timeoutMilliseconds)))
                return
            }
            then(Result { () throws(WireError) in try ServiceClient.decodeReply(op, reply, from: instances.endpoint) })
        })
    }

    /// A connected socket for one try, to the current instance: an idle one, or a new one.
    fileprivate func socket() throws -> Socket {
        if let socket = idle.popLast() { return socket }
        let socket = try Socket(host.context, .dealer)
        try socket.secure(with: credentials)
        try socket.connect(instances.endpoint)
        return socket
    }

    /// A socket whose exchange ended with its reply can carry the next request, if it is to the current instance.
    fileprivate func reuse(_ socket: Socket, instance: Int) {
        if instance == instances.current, idle.count < 2 { idle.append(socket) } else { socket.close() }
    }

    /// The instance at `index` left a try unanswered: the next tries go to the next one.
    fileprivate func unanswered(at index: Int) {
        guard index == instances.current else { return }
        for socket in idle { socket.close() }
        idle = []
        instances.unanswered(at: index)
    }
}

/// One request in flight: its socket, the deadline of the current try and the tries left.
final class Exchange {
    let client: UpstreamClient
    let frame: Data
    let timeoutMilliseconds: Int
    var triesLeft: Int
    var socket: Socket?
    /// The upstream instance the current try went to.
    var instance = 0
    var deadline: UInt64 = 0
    let done: (Data?) -> Void

    init(client: UpstreamClient, frame: Data, timeoutMilliseconds: Int, tries: Int, done: @escaping (Data?) -> Void) {
        self.client = client
        self.frame = frame
        self.timeoutMilliseconds = timeoutMilliseconds
        triesLeft = tries
        self.done = done
    }

    /// Sends the next try on a socket of its own; false when none is left. A send that fails counts
    /// as a try that times out: the deadline still bounds it.
    func nextTry() -> Bool {
        guard triesLeft > 0 else { return false }
        triesLeft -= 1
        deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, timeoutMilliseconds)) * 1_000_000
        instance = client.instances.current
        do {
            let socket = try client.socket()
            self.socket = socket
            _ = try socket.send(multipart: [Data(), frame], dontWait: true)
        } catch {
            // Waited out like a silent upstream; the socket (if any) is replaced on the next try.
        }
        return true
    }
}

/// The exchanges in flight, polled by the loop (`ServiceHost.run`): their sockets are added to the
/// poll, replies are taken when readable, deadlines are checked every turn and bound its sleep.
final class PendingExchanges {
    private var inFlight: [ObjectIdentifier: Exchange] = [:]
    /// The exchanges whose sockets the current poll covers, in the order it polled them.
    private var polled: [Exchange] = []

    /// Set when the loop stopped: nothing new goes out.
    private var closed = false

    func start(_ exchange: Exchange) {
        guard !closed, exchange.nextTry() else { exchange.done(nil); return }
        inFlight[ObjectIdentifier(exchange)] = exchange
    }

    /// The sockets to poll this turn (remembered, so `serve` can tell whose reply came in).
    func pollSet() -> [Socket] {
        polled = inFlight.values.filter { $0.socket != nil }
        return polled.map { $0.socket! }
    }

    /// How long the loop may sleep before a try's deadline passes.
    func millisecondsToNextDeadline() -> Int? {
        guard let next = inFlight.values.map(\.deadline).min() else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        return next <= now ? 0 : Int((next - now + 999_999) / 1_000_000)
    }

    /// Takes the replies that arrived (`readable`: the poll's flags for `pollSet()`), then ends or
    /// retries the tries whose deadline passed. Completions run last, so one that starts another
    /// exchange (the next page, the next step of an op) adds to a settled list.
    func serve(readable: ArraySlice<Bool>) {
        var completions: [() -> Void] = []
        for (exchange, isReadable) in zip(polled, readable) where isReadable {
            guard let socket = exchange.socket, inFlight[ObjectIdentifier(exchange)] != nil else { continue }
            var reply: Data?
            while let frames = try? socket.receiveMultipart(dontWait: true) { reply = reply ?? frames.last }
            guard let reply else { continue }
            inFlight[ObjectIdentifier(exchange)] = nil
            exchange.socket = nil
            exchange.client.reuse(socket, instance: exchange.instance)
            completions.append { exchange.done(reply) }
        }
        polled = []
        let now = DispatchTime.now().uptimeNanoseconds
        for exchange in inFlight.values where exchange.deadline <= now {
            exchange.socket?.close()  // Lazy Pirate: a late reply must never meet the next request
            exchange.socket = nil
            exchange.client.unanswered(at: exchange.instance)
            if !exchange.nextTry() {
                inFlight[ObjectIdentifier(exchange)] = nil
                completions.append { exchange.done(nil) }
            }
        }
        for completion in completions { completion() }
    }

    /// Ends every exchange as unanswered (the loop is stopping): deferred replies still go out.
    func cancelAll() {
        closed = true
        let all = Array(inFlight.values)
        inFlight.removeAll()
        polled = []
        for exchange in all {
            exchange.socket?.close()
            exchange.socket = nil
            exchange.done(nil)
        }
    }
}
