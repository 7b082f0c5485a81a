import CZeroMQ

public enum SocketType: Sendable {
    case pair, pub, sub, req, rep, dealer, router, pull, push, xpub

    var raw: Int32 {
        switch self {
        case .pair: ZMQ_PAIR
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pull: ZMQ_PULL
        case .push: ZMQ_PUSH
        case .xpub: ZMQ_XPUB
        }
    }
}

/// One ZeroMQ socket, owned by the thread that created it for its whole life.
///
/// It is deliberately not `Sendable`: Swift 6 then refuses to hand it to another thread,
/// which is the zguide's first rule. It is closed exactly once, in `deinit` or `close()`.
public final class Socket {
    private var handle: UnsafeMutableRawPointer?
    /// The receive buffers, one per frame of the message being read, reused for every message. A
    /// `zmq_msg_t` must never be copied, so they live behind a pointer (and move with `zmq_msg_move`).
    var messages: UnsafeMutablePointer<zmq_msg_t>
    var messageCapacity = 4
    private let context: Context
    public let type: SocketType
    /// Whether a message may wait that the descriptor libzmq signals will not announce: set by
    /// every call on the socket (each may take that signal), cleared when `ZMQ_EVENTS` found
    /// nothing to receive. `Poller` reads the events of such sockets before it waits.
    var mayHoldUnsignalled = true
    private var descriptor: Int32?

    /// Opens a socket with LINGER 0, so a pending message never blocks shutdown.
    public init(_ context: Context, _ type: SocketType, linger: Int32 = 0) throws {
        guard let handle = zmq_socket(context.handle, type.raw) else { throw ZMQError.last() }
        self.handle = handle
        self.context = context
        self.type = type
        messages = .allocate(capacity: messageCapacity)
        try set(ZMQ_LINGER, linger)
    }

    deinit {
        close()
        messages.deallocate()
    }

    /// How long a closed socket keeps sending what it holds (0: drop it; -1: until sent).
    public func setLinger(milliseconds: Int32) throws { try set(ZMQ_LINGER, milliseconds) }

    /// Closes now; later calls on this socket throw ENOTSOCK.
    public func close() {
        if let handle {
            zmq_close(handle)
            self.handle = nil
        }
    }

    @usableFromInline func open() throws -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError(code: ENOTSOCK) }
        mayHoldUnsignalled = true
        return handle
    }

    // MARK: Endpoints

    /// Binds and returns the endpoint actually bound (a `tcp://127.0.0.1:*` wildcard resolved to its port).
    @discardableResult
    public func bind(_ endpoint: String) throws -> String {
        let handle = try open()
        try checkRetryingInterrupts { zmq_bind(handle, endpoint) }
        return try lastEndpoint()
    }

    public func connect(_ endpoint: String) throws {
        let handle = try open()
        try checkRetryingInterrupts { zmq_connect(handle, endpoint) }
    }

    private func lastEndpoint() throws -> String {
        var buffer = [CChar](repeating: 0, count: 512)
        var size = buffer.count
        try check(zmq_getsockopt(open(), ZMQ_LAST_ENDPOINT, &buffer, &size))
        return text(buffer)
    }

    // MARK: Polling (Poller)

    /// The descriptor libzmq makes readable when commands reach this socket (`ZMQ_FD`): a message
    /// arrived for a reader that had found none, a peer came or went. Edge-triggered, so it says
    /// nothing about messages that waited before the socket's last call.
    func pollDescriptor() throws -> Int32 {
        // Checked first: a closed socket's descriptor number may belong to another file by now.
        guard let handle else { throw ZMQError(code: ENOTSOCK) }
        if let descriptor { return descriptor }
        var value: Int32 = -1
        var size = MemoryLayout<Int32>.size
        try check(zmq_getsockopt(handle, ZMQ_FD, &value, &size))
        descriptor = value
        return value
    }

    /// Whether a message can be received now (`ZMQ_EVENTS`, which first takes the commands the
    /// descriptor announced); nil when a signal interrupted that.
    func hasMessageNow() throws -> Bool? {
        guard let handle else { throw ZMQError(code: ENOTSOCK) }
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, ZMQ_EVENTS, &events, &size) == 0 else {
            let error = ZMQError.last()
            if error.code == EINTR { return nil }
            throw error
        }
        let readable = events & ZMQ_POLLIN != 0
        // One left unreceived stays announced by nothing: it is looked for again next time.
        mayHoldUnsignalled = readable
        return readable
    }
}

@available(*, unavailable, message: "a socket belongs to the thread that created it")
extension Socket: Sendable {}
