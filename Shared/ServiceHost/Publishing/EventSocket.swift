import Foundation
import LHTSchema
import ZeroMQ

/// The events socket: an XPUB in manual mode, so the publisher grants each subscription itself —
/// a user only `<type>.<ownUserId>.` prefixes of this publisher's event types and the heartbeat
/// (PROTOCOL "Security", docs/protocol-additions.md); without keys everyone is granted everything, as a PUB would.
final class EventSocket {
    private(set) var endpoint: String?
    /// When anything was last sent; a second of silence sends a heartbeat.
    private(set) var lastSent = Date.distantPast
    let socket: Socket
    private let publishedTypes: [EventTypeInfo]

    /// Made first and bound after the host has secured it (`bind`).
    init(context: Context, service: ServiceName) throws {
        socket = try Socket(context, .xpub)
        try socket.setSendHighWaterMark(100_000)
        try socket.setXPubManual(true)
        publishedTypes = Events.published(by: service)
    }

    func bind(_ endpoint: String) throws { self.endpoint = try socket.bind(endpoint) }

    /// Dropped, as a multipart send would be, when the subscribers' queues are full.
    func send(topic: String, _ envelope: Data) throws {
        if try socket.send(topic, more: true, dontWait: true) { try socket.send(envelope, dontWait: true) }
        lastSent = Date()
    }

    /// Whether `caller` may receive what `prefix` selects.
    func grants(_ prefix: [UInt8], to caller: Caller) -> Bool {
        if caller.mayDoEverything { return true }
        guard let user = caller.user else { return false }
        let text = String(decoding: prefix, as: UTF8.self)
        return text == Heartbeat.topic || publishedTypes.contains { text.hasPrefix($0.prefix(userId: user)) }
    }

    /// Reads the waiting (un)subscription messages and grants the allowed ones to the peer that
    /// sent each; `refused` hears of the others.
    func serveSubscriptions(caller: (String?) -> Caller, refused: (Caller, String) -> Void) throws {
        while let (frames, userId) = try socket.receiveMultipart(dontWait: true, property: "User-Id") {
            guard let message = frames.first, let kind = message.first else { continue }
            let prefix = [UInt8](message.dropFirst())
            switch kind {
            case 1:
                let who = caller(userId)
                if grants(prefix, to: who) {
                    try socket.subscribe(prefix)
                } else {
                    refused(who, String(decoding: prefix, as: UTF8.self))
                }
            case 0:
                try socket.unsubscribe(prefix)
            default:
                continue
            }
        }
    }
}
