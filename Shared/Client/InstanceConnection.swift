import Foundation
import ZeroMQ

/// A DEALER to one instance, and a monitor that tells whether it ever completed a connection: a
/// request sent on a socket that never did cannot have reached anyone (libzmq sends messages only
/// after the ZMTP handshake), so it may go to another instance whatever it is. Used by one thread.
public final class InstanceConnection {
    /// ZMQ_EVENT_HANDSHAKE_SUCCEEDED (stable since libzmq 4.3).
    private static let handshakeSucceeded = MonitorEvents(rawValue: 0x1000)

    public let socket: Socket
    private let monitor: Socket
    private var connected = false

    public init(context: Context, endpoint: String, credentials: CurveCredentials?) throws {
        socket = try Socket(context, .dealer)
        try socket.secure(with: credentials)
        monitor = try socket.monitor(Self.handshakeSucceeded, context: context)
        try socket.connect(endpoint)
    }

    /// Whether a handshake with the instance ever succeeded on this socket; true when that cannot be read.
    public func wasEverConnected() -> Bool {
        do {
            while !connected, let report = try monitor.receiveMonitorReport() {
                connected = report.event.contains(Self.handshakeSucceeded)
            }
            return connected
        } catch {
            return true
        }
    }

    /// Closes both sockets; messages not yet sent are dropped (linger 0), so none leaves later.
    public func close() {
        socket.close()
        monitor.close()
    }
}
