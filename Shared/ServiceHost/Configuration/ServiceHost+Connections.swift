import Foundation
import Logging
import ZeroMQ

extension ServiceHost {
    /// Makes `socket` (api, events, intake) one of this service's servers, before it is bound: a
    /// CURVE server with its keys when it runs with keys, whose handshake refusals are logged and
    /// counted. One `takingRequests` (api, intake) reads frames up to `largestFrame` and closes the
    /// connection of a peer that sends a larger one (ZMQ_MAXMSGSIZE), and counts its ended
    /// connections in `<role>Disconnects`. One monitor serves both, since a socket has at most one.
    public func serve(_ socket: Socket, role: String, takingRequests: Bool = false) throws {
        var events: MonitorEvents = takingRequests ? .disconnected : []
        if let security {
            try security.makeServer(socket)
            // libzmq turns these peers away itself (plaintext, a wrong server key): the ZAP handler never hears of them.
            events.insert(.handshakeFailed)
        }
        if takingRequests {
            // libzmq measures a frame as it travels: with CURVE, 33 bytes longer (command and nonce, MAC, flags).
            try socket.setMaxMessageSize(bytes: Int64(Self.largestFrame + (security == nil ? 0 : 33)))
            count(Self.disconnects(role), by: 0)
        }
        guard !events.isEmpty else { return }
        let monitor = try socket.monitor(events, context: context)
        watch(monitor) { [unowned self] in
            while let report = try? monitor.receiveMonitorReport() {
                if report.event == .disconnected {
                    connectionClosed(role)
                } else {
                    refused(.revoked(key: nil), reason: "handshake", "\(role) \(report.address): a plaintext peer or a wrong server key",
                            counter: "authRefused.handshake")
                }
            }
        }
    }

    static func disconnects(_ role: String) -> String { role + "Disconnects" }

    /// libzmq closes the connection of a peer whose frame is over `largestFrame` (PROTOCOL: no reply,
    /// logged and counted) and tells the monitor only that it closed, as it does when a client goes
    /// away. So every closed connection is counted, and logged at most once a minute per socket.
    private func connectionClosed(_ role: String) {
        let counter = Self.disconnects(role)
        count(counter)
        let now = Date()
        guard closesLogged[role].map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return }
        closesLogged[role] = now
        logger.info("\(role) connection closed: by its client, or by libzmq for a frame over 4 MiB",
                    metadata: ["closed": "\(counters[counter] ?? 0)"])
    }
}
