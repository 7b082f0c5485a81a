import CZeroMQ

/// A libzmq error: the errno and libzmq's own text for it.
public struct ZMQError: Error, Equatable, CustomStringConvertible {
    public let code: Int32
    /// Made when asked for: an idle socket's non-blocking receive fails with EAGAIN on every turn of
    /// a loop, and `strerror`'s localized lookup was a twentieth of a quiet service's CPU.
    public var message: String { String(cString: zmq_strerror(code)) }

    public init(code: Int32) {
        self.code = code
    }

    @usableFromInline static func last() -> ZMQError { ZMQError(code: zmq_errno()) }

    /// The context was terminated: the owning loop should end.
    public var isTerminated: Bool { code == ETERM }
    public var description: String { "zmq error \(code): \(message)" }
}

/// The text in a NUL-terminated buffer libzmq filled.
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

@inline(__always)
func check(_ rc: Int32) throws {
    if rc != 0 { throw ZMQError.last() }
}

/// For calls that first process the socket's pending commands (bind, connect): a signal during
/// that step fails them with EINTR before they did anything, so they are simply made again.
func checkRetryingInterrupts(_ call: () -> Int32) throws {
    while call() != 0 {
        let error = ZMQError.last()
        if error.code != EINTR { throw error }
    }
}

/// Whether this libzmq was built with a capability, e.g. "curve".
public func zmqHas(_ capability: String) -> Bool { zmq_has(capability) != 0 }

/// The libzmq version this process runs against, e.g. "4.3.4".
public func zmqVersion() -> String {
    var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
    zmq_version(&major, &minor, &patch)
    return "\(major).\(minor).\(patch)"
}
