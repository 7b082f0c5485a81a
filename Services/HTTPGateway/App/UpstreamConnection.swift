import Foundation
import LHTClient
import ZeroMQ

/// A DEALER to one instance of a service, and a monitor that tells whether it ever completed a
/// connection: a request sent on a socket that never did cannot have reached anyone (libzmq sends
/// messages only after the ZMTP handshake), so it may go to another instance whatever it is.
/// As `ServiceClient`'s connection; owned by the `UpstreamLane`'s thread.
final class UpstreamConnection {
    /// ZMQ_EVENT_HANDSHAKE_SUCCEEDED (stable since libzmq 4.3).
    private static let handshakeSucceeded = MonitorEvents(rawValue: 0x1000)

    let socket: Socket
    /// Which instance (an index into the endpoints) it talks to.
    let instance: Int
    /// Tells this connection from the lane's earlier ones.
    let generation: Int
    private let monitor: Socket
    private var connected = false

    init(context: Context, endpoint: String, instance: Int, generation: Int, credentials: CurveCredentials?) throws {
        socket = try Socket(context, .dealer)
        self.instance = instance
        self.generation = generation
        try socket.secure(with: credentials)
        monitor = try socket.monitor(Self.handshakeSucceeded, context: context)
        try socket.connect(endpoint)
    }

    /// Whether a handshake with the instance ever succeeded on this socket; true when that cannot be read.
    func wasEverConnected() -> Bool {
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
    func close() {
        socket.close()
        monitor.close()
    }
}
