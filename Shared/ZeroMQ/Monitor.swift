import CZeroMQ
import Foundation

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

    /// The next report waiting on a monitor's PAIR (`monitor`); nil when none is.
    public func receiveMonitorReport() throws -> MonitorReport? {
        guard let frames = try receiveMultipart(dontWait: true) else { return nil }
        let head = frames.first ?? Data()
        let event = head.count >= 2 ? Int32(head[head.startIndex]) | Int32(head[head.startIndex + 1]) << 8 : 0
        return MonitorReport(event: MonitorEvents(rawValue: event),
                             address: frames.count > 1 ? String(decoding: frames[1], as: UTF8.self) : "")
    }
}

/// One event a monitor reported, with the address libzmq names for it.
public struct MonitorReport: Sendable {
    public let event: MonitorEvents
    public let address: String
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
    /// A connection ended, whoever ended it: libzmq does not say why (a peer that went away, a frame
    /// over ZMQ_MAXMSGSIZE, a refused handshake).
    public static let disconnected = MonitorEvents(rawValue: ZMQ_EVENT_DISCONNECTED)
}
