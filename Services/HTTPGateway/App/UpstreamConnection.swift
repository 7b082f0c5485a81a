import LHTClient
import ZeroMQ

/// The lane's DEALER to one instance (`InstanceConnection`), with which instance it is and which of
/// the lane's connections. Owned by the `UpstreamLane`'s thread.
final class UpstreamConnection {
    private let connection: InstanceConnection
    /// Which instance (an index into the endpoints) it talks to.
    let instance: Int
    /// Tells this connection from the lane's earlier ones.
    let generation: Int

    init(context: Context, endpoint: String, instance: Int, generation: Int, credentials: CurveCredentials?) throws {
        connection = try InstanceConnection(context: context, endpoint: endpoint, credentials: credentials)
        self.instance = instance
        self.generation = generation
    }

    var socket: Socket { connection.socket }
    func wasEverConnected() -> Bool { connection.wasEverConnected() }
    func close() { connection.close() }
}
