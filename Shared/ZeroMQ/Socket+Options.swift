import CZeroMQ
import Foundation

/// Socket options: limits, subscriptions, CurveZMQ and ZAP.
extension Socket {
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

    func set(_ option: Int32, _ value: Int32) throws {
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
}
