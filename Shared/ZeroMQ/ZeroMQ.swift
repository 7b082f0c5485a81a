import CZeroMQ
import Foundation
import Synchronization

/// A libzmq error: the errno and libzmq's own text for it.
public struct ZMQError: Error, Equatable, CustomStringConvertible {
    public let code: Int32
    public let message: String

    public init(code: Int32) {
        self.code = code
        message = String(cString: zmq_strerror(code))
    }

    @usableFromInline static func last() -> ZMQError { ZMQError(code: zmq_errno()) }

    /// The context was terminated: the owning loop should end.
    public var isTerminated: Bool { code == ETERM }
    public var description: String { "zmq error \(code): \(message)" }
}

/// A ZeroMQ context. libzmq documents contexts as thread-safe, unlike sockets.
public final class Context: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    /// `inproc://label-n`, with an `n` no earlier call in this process had. Not an object's address:
    /// an address is reused as soon as its object is freed, while libzmq releases an inproc name only
    /// once its reaper thread has destroyed the closed socket, so a new object's socket could find
    /// the name still bound (EADDRINUSE).
    public static func uniqueInprocEndpoint(_ label: String) -> String {
        "inproc://\(label)-\(inprocSerial.add(1, ordering: .relaxed).newValue)"
    }

    private static let inprocSerial = Atomic<UInt64>(0)

    public init(ioThreads: Int32 = 1) throws {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last() }
        self.handle = handle
        zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads)
    }

    /// Makes blocking calls on this context's sockets return ETERM, from any thread.
    public func shutdown() { zmq_ctx_shutdown(handle) }

    private let terminating = Atomic<Bool>(false)

    /// For a process about to exit: shuts the context down and terminates it on another thread,
    /// which waits until every socket is closed and the closed ones have sent what they hold (up to
    /// their LINGER). Returns whether that finished within `milliseconds`; either way the context
    /// is not terminated again when released.
    public func terminate(waitingAtMost milliseconds: Int) -> Bool {
        guard !terminating.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        let done = DispatchSemaphore(value: 0)
        let handle = UInt(bitPattern: self.handle)
        Thread.detachNewThread {
            let pointer = UnsafeMutableRawPointer(bitPattern: handle)
            zmq_ctx_shutdown(pointer)
            while zmq_ctx_term(pointer) != 0 && zmq_errno() == EINTR {}
            done.signal()
        }
        return done.wait(timeout: .now() + .milliseconds(milliseconds)) == .success
    }

    deinit {
        // Every socket holds a strong reference to its context, so none is open here.
        guard !terminating.load(ordering: .acquiring) else { return }
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }
}

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
    private var messages: UnsafeMutablePointer<zmq_msg_t>
    private var messageCapacity = 4
    private let context: Context
    public let type: SocketType

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

    // MARK: Options

    public func setSendHighWaterMark(_ messages: Int32) throws { try set(ZMQ_SNDHWM, messages) }
    public func setReceiveHighWaterMark(_ messages: Int32) throws { try set(ZMQ_RCVHWM, messages) }
    /// -1 blocks forever; a receive that times out returns nil.
    public func setReceiveTimeout(milliseconds: Int32) throws { try set(ZMQ_RCVTIMEO, milliseconds) }
    /// Larger inbound messages drop the peer's connection instead of reaching us.
    public func setMaxMessageSize(bytes: Int64) throws { try set64(ZMQ_MAXMSGSIZE, bytes) }

    /// A SUB receives messages whose first frame starts with `prefix` (bytes; "" is everything).
    /// On an XPUB with `setXPubManual(true)` it grants `prefix` to the peer whose subscription
    /// message was received last (and to no one else): that is how a publisher authorizes one.
    public func subscribe<Bytes: ContiguousBytes>(_ prefix: Bytes) throws {
        let handle = try open()
        try prefix.withUnsafeBytes { try check(zmq_setsockopt(handle, ZMQ_SUBSCRIBE, $0.baseAddress, $0.count)) }
    }
    public func subscribe(_ prefix: String) throws { try subscribe(Array(prefix.utf8)) }

    /// Reports `events` of this socket to the PAIR socket returned (made on `context`, for the calling
    /// thread), over an inproc name unique in the process: two frames, the event (`UInt16`
    /// little-endian, then a `UInt32` value) and an address.
    public func monitor(_ events: MonitorEvents, context: Context) throws -> Socket {
        let endpoint = Context.uniqueInprocEndpoint("monitor")
        try check(zmq_socket_monitor(open(), endpoint, events.rawValue))
        let reports = try Socket(context, .pair)
        try reports.connect(endpoint)
        return reports
    }

    /// Undoes `subscribe` (on a manual XPUB: for the peer whose message was received last).
    public func unsubscribe<Bytes: ContiguousBytes>(_ prefix: Bytes) throws {
        let handle = try open()
        try prefix.withUnsafeBytes { try check(zmq_setsockopt(handle, ZMQ_UNSUBSCRIBE, $0.baseAddress, $0.count)) }
    }

    // MARK: Security (CurveZMQ, ZAP)

    /// Makes this socket a CURVE server; set before `bind`. Its own keys come from `setCurveKeys`.
    /// libzmq admits every client when no ZAP handler is bound on the context, so start one first.
    public func setCurveServer(_ on: Bool) throws { try set(ZMQ_CURVE_SERVER, Int32(on ? 1 : 0)) }

    /// This socket's own long-term key pair, Z85 text (40 characters each, as in certificate files).
    public func setCurveKeys(publicKey: String, secretKey: String) throws {
        try setKey(ZMQ_CURVE_PUBLICKEY, publicKey)
        try setKey(ZMQ_CURVE_SECRETKEY, secretKey)
    }

    /// Makes this socket a CURVE client of the server with this public key (Z85); set before `connect`,
    /// after `setCurveKeys`.
    public func setCurveServerKey(_ publicKey: String) throws { try setKey(ZMQ_CURVE_SERVERKEY, publicKey) }

    /// The ZAP domain this server socket passes to the handler (also makes NULL-mechanism peers go through ZAP).
    public func setZAPDomain(_ domain: String) throws { try setBytes(ZMQ_ZAP_DOMAIN, Array(domain.utf8)) }

    /// An XPUB hands every (un)subscription message to the application, which grants it with
    /// `subscribe(_:)` or not at all; nothing is filtered in until then.
    public func setXPubManual(_ on: Bool) throws { try set(ZMQ_XPUB_MANUAL, Int32(on ? 1 : 0)) }

    /// An XPUB passes on duplicate subscriptions and every unsubscription too (each peer's, not just the first/last).
    public func setXPubVerboser(_ on: Bool) throws { try set(ZMQ_XPUB_VERBOSER, Int32(on ? 1 : 0)) }

    /// Keys go to libzmq as 32 binary bytes, so a malformed Z85 text fails here and not at the handshake.
    private func setKey(_ option: Int32, _ z85: String) throws {
        guard let key = Z85.decode(z85), key.count == 32 else { throw ZMQError(code: EINVAL) }
        try setBytes(option, key)
    }

    private func set(_ option: Int32, _ value: Int32) throws {
        var value = value
        try check(zmq_setsockopt(open(), option, &value, MemoryLayout<Int32>.size))
    }

    private func set64(_ option: Int32, _ value: Int64) throws {
        var value = value
        try check(zmq_setsockopt(open(), option, &value, MemoryLayout<Int64>.size))
    }

    private func setBytes(_ option: Int32, _ bytes: [UInt8]) throws {
        let handle = try open()
        try bytes.withUnsafeBytes { try check(zmq_setsockopt(handle, option, $0.baseAddress, $0.count)) }
    }

    // MARK: Sending

    /// Sends one frame. Returns false when `dontWait` is set and the message would block.
    @inlinable @discardableResult
    public func send<Bytes: ContiguousBytes>(_ frame: Bytes, more: Bool = false, dontWait: Bool = false) throws -> Bool {
        let handle = try open()
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        while true {
            // zmq_send copies the bytes, so the buffer only needs to live for the call.
            let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if rc >= 0 { return true }
            let error = ZMQError.last()
            if error.code == EINTR { continue }
            if error.code == EAGAIN { return false }
            throw error
        }
    }

    /// Sends a UTF-8 string as one frame (its byte count, not its character count).
    @discardableResult
    public func send(_ text: String, more: Bool = false, dontWait: Bool = false) throws -> Bool {
        var text = text  // withUTF8 may make it native, so it takes a var
        return try text.withUTF8 { try send(UnsafeRawBufferPointer($0), more: more, dontWait: dontWait) }
    }

    /// Sends every frame as one multipart message. Returns false only if the first frame would block.
    @inlinable @discardableResult
    public func send<Bytes: ContiguousBytes>(multipart frames: [Bytes], dontWait: Bool = false) throws -> Bool {
        guard let last = frames.last else { return true }
        return try send(multipart: frames.dropLast(), then: last, dontWait: dontWait)
    }

    /// As `send(multipart:)`, for `frames` followed by `last` (a routing envelope and a body),
    /// without building one array of them.
    @inlinable @discardableResult
    public func send<Frames: Collection, Last: ContiguousBytes>(multipart frames: Frames, then last: Last,
                                                                dontWait: Bool = false) throws -> Bool where Frames.Element: ContiguousBytes {
        var isFirst = true
        for frame in frames {
            // Once the first frame is queued libzmq accepts the rest atomically.
            if try !send(frame, more: true, dontWait: dontWait), isFirst { return false }
            isFirst = false
        }
        return try send(last, dontWait: dontWait) || !isFirst
    }

    // MARK: Receiving

    /// Receives one frame; nil when nothing arrived (`dontWait`, or the receive timeout passed).
    public func receive(dontWait: Bool = false) throws -> Data? {
        try withReceivedFrames(dontWait: dontWait, whole: false) { Data($0[0]) }
    }

    /// Receives a whole multipart message; nil when nothing arrived.
    public func receiveMultipart(dontWait: Bool = false) throws -> [Data]? {
        try withReceivedMultipart(dontWait: dontWait) { $0.map { Data($0) } }
    }

    /// Receives a whole multipart message with one property of its connection, e.g. "User-Id" (what the
    /// ZAP handler said for the peer: on a ROUTER per request, on an XPUB per subscription message) or
    /// "Peer-Address". The property is nil when the connection has none. nil when nothing arrived.
    public func receiveMultipart(dontWait: Bool = false, property: String) throws -> (frames: [Data], property: String?)? {
        try withReceivedMultipart(dontWait: dontWait) { ($0.map { Data($0) }, $0.property(property)) }
    }

    /// Receives a whole multipart message and hands `read` its frames where libzmq put them: nothing
    /// is copied or allocated per message. The frames are valid only until `read` returns, and `read`
    /// must not receive on this socket (the next message would take their buffers). nil (and `read`
    /// is not called) when nothing arrived.
    public func withReceivedMultipart<Result>(dontWait: Bool = false, _ read: (ReceivedFrames) throws -> Result) throws -> Result? {
        try withReceivedFrames(dontWait: dontWait, whole: true, read)
    }

    /// Receives the next frame, or (`whole`) every frame of the next message, into `messages`, hands
    /// them to `read` and closes them.
    private func withReceivedFrames<Result>(dontWait: Bool, whole: Bool, _ read: (ReceivedFrames) throws -> Result) throws -> Result? {
        let handle = try open()
        var count = 0
        defer { for index in 0..<count { zmq_msg_close(messages + index) } }
        var more = true
        while more && (whole || count == 0) {
            if count == messageCapacity { growMessages(keeping: count) }
            let message = messages + count
            zmq_msg_init(message)
            count += 1
            // The rest of a multipart message is already here (libzmq delivers it whole): only the first frame waits.
            while zmq_msg_recv(message, handle, (count == 1 && dontWait) ? ZMQ_DONTWAIT : 0) < 0 {
                let error = ZMQError.last()
                if error.code == EINTR { continue }
                if error.code == EAGAIN && count == 1 { return nil }
                throw error
            }
            // From the message itself, rather than asking the socket afterwards (ZMQ_RCVMORE).
            more = zmq_msg_more(message) != 0
        }
        return try read(ReceivedFrames(messages, count: count))
    }

    /// Doubles the receive buffers, moving the `open` frames received so far into the new ones.
    private func growMessages(keeping open: Int) {
        let grown = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: messageCapacity * 2)
        for index in 0..<open {
            zmq_msg_init(grown + index)
            zmq_msg_move(grown + index, messages + index)
            zmq_msg_close(messages + index)
        }
        messages.deallocate()
        messages = grown
        messageCapacity *= 2
    }

    /// The raw handle, for `zmq_poll`.
    var pollHandle: UnsafeMutableRawPointer? { handle }
}

/// The frames of one received message, in libzmq's buffers: valid only inside the
/// `withReceivedMultipart` call that hands them over.
public struct ReceivedFrames: RandomAccessCollection {
    @usableFromInline let messages: UnsafeMutablePointer<zmq_msg_t>
    public let count: Int

    init(_ messages: UnsafeMutablePointer<zmq_msg_t>, count: Int) {
        self.messages = messages
        self.count = count
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    @inlinable public subscript(index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "frame index out of range")
        return UnsafeRawBufferPointer(start: zmq_msg_data(messages + index), count: zmq_msg_size(messages + index))
    }

    /// One property of the message's connection, e.g. "User-Id"; nil when the connection has none
    /// (no User-Id without ZAP). A ROUTER makes the routing-id frame itself, without the connection's
    /// metadata, so each frame is asked until one has it.
    public func property(_ name: String) -> String? {
        for index in 0..<count {
            if let value = zmq_msg_gets(messages + index, name) { return String(cString: value) }
        }
        return nil
    }
}

/// Socket events a monitor reports (`Socket.monitor`).
public struct MonitorEvents: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// A connection was made (a connecting socket, including every reconnect).
    public static let connected = MonitorEvents(rawValue: ZMQ_EVENT_CONNECTED)
    /// CURVE refusals libzmq decides before any ZAP request: a plaintext peer, a wrong server key.
    public static let handshakeFailed = MonitorEvents(
        rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
}

/// The text in a NUL-terminated buffer libzmq filled.
private func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

@inline(__always)
private func check(_ rc: Int32) throws {
    if rc != 0 { throw ZMQError.last() }
}

/// For calls that first process the socket's pending commands (bind, connect): a signal during
/// that step fails them with EINTR before they did anything, so they are simply made again.
private func checkRetryingInterrupts(_ call: () -> Int32) throws {
    while call() != 0 {
        let error = ZMQError.last()
        if error.code != EINTR { throw error }
    }
}

/// `zmq_poll` over sockets owned by the calling thread.
public enum Poller {
    /// Waits until at least one socket is readable or `timeoutMilliseconds` pass (-1: no limit).
    /// Returns, per socket, whether it is readable. An interrupted wait returns all false.
    public static func readable(_ sockets: [Socket], timeoutMilliseconds: Int) throws -> [Bool] {
        var items = sockets.map { zmq_pollitem_t(socket: $0.pollHandle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0) }
        let rc = zmq_poll(&items, Int32(items.count), timeoutMilliseconds)
        if rc < 0 {
            let error = ZMQError.last()
            if error.code == EINTR { return Array(repeating: false, count: sockets.count) }
            throw error
        }
        return items.map { $0.revents & Int16(ZMQ_POLLIN) != 0 }
    }
}

/// A CURVE key pair, Z85 text (40 characters each).
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: String
    public let secretKey: String

    /// A fresh pair from libzmq (`zmq_curve_keypair`, libsodium's random source).
    public static func generate() throws -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41), secretKey = [CChar](repeating: 0, count: 41)
        try check(zmq_curve_keypair(&publicKey, &secretKey))
        return CurveKeyPair(publicKey: text(publicKey), secretKey: text(secretKey))
    }

    /// The public key that belongs to a Z85 secret key (`zmq_curve_public`); nil for a malformed one.
    public static func publicKey(forSecretKey secretKey: String) -> String? {
        guard Z85.decode(secretKey)?.count == 32 else { return nil }
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secretKey) == 0 else { return nil }
        return text(publicKey)
    }
}

/// ZeroMQ's Z85 text encoding (RFC 32): 4 bytes become 5 printable characters.
public enum Z85 {
    /// nil unless the byte count is a multiple of 4.
    public static func encode(_ bytes: [UInt8]) -> String? {
        guard bytes.count % 4 == 0 else { return nil }
        var text = [CChar](repeating: 0, count: bytes.count / 4 * 5 + 1)
        guard zmq_z85_encode(&text, bytes, bytes.count) != nil else { return nil }
        return ZeroMQ.text(text)
    }

    /// nil unless the length is a multiple of 5 and every character is in the Z85 alphabet.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        // libzmq checks the length but not every character: a stray one would decode to garbage.
        guard chars.count % 5 == 0, chars.allSatisfy({ alphabet.contains($0) }) else { return nil }
        var bytes = [UInt8](repeating: 0, count: chars.count / 5 * 4)
        guard zmq_z85_decode(&bytes, text) != nil else { return nil }
        return bytes
    }

    private static let alphabet = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)
}

/// Whether this libzmq was built with a capability, e.g. "curve".
public func zmqHas(_ capability: String) -> Bool { zmq_has(capability) != 0 }

/// The libzmq version this process runs against, e.g. "4.3.4".
public func zmqVersion() -> String {
    var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
    zmq_version(&major, &minor, &patch)
    return "\(major).\(minor).\(patch)"
}

@available(*, unavailable, message: "a socket belongs to the thread that created it")
extension Socket: Sendable {}
