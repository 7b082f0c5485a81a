import CZeroMQ

extension Socket {
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
