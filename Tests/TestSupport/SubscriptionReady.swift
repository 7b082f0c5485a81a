import Foundation
import LHTSchema
import ZeroMQ

extension Socket {
    /// Waits until this SUB's subscriptions have reached its one publisher (the zguide's slow joiner)
    /// instead of sleeping a guessed while. It subscribes to heartbeats too (sent after a second without
    /// events) and returns at the first one: the publisher sends it only once it holds the subscriptions
    /// that came with the handshake. Returns the other messages received meanwhile, in order. A heartbeat
    /// already on its way may still arrive afterwards: readers that did not ask for them skip `Heartbeat.topic`.
    @discardableResult
    public func awaitSubscribed(timeout: TimeInterval = 20) throws -> [[Data]] {
        try subscribe(Heartbeat.topic)
        defer { try? unsubscribe(Array(Heartbeat.topic.utf8)) }
        let deadline = Date().addingTimeInterval(timeout)
        var others: [[Data]] = []
        while case let remaining = Int(deadline.timeIntervalSinceNow * 1000), remaining > 0 {
            guard try Poller.readable([self], timeoutMilliseconds: min(remaining, 200))[0] else { continue }
            while let message = try receiveMultipart(dontWait: true) {
                if message.first.map({ String(decoding: $0, as: UTF8.self) }) == Heartbeat.topic { return others }
                others.append(message)
            }
        }
        throw HarnessError("no heartbeat reached the subscriber within \(timeout) s: its subscriptions may not have reached the publisher")
    }
}

extension Socket {
    /// On an XPUB that publishes like a PUB (to a service's intake): waits until a subscriber's
    /// subscription has arrived, which is when a PUB stops dropping what it sends (the slow joiner).
    public func awaitSubscriber(timeout: TimeInterval = 20) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while case let remaining = Int(deadline.timeIntervalSinceNow * 1000), remaining > 0 {
            guard try Poller.readable([self], timeoutMilliseconds: min(remaining, 200))[0] else { continue }
            while let frame = try receive(dontWait: true) {
                if frame.first == 1 { return }
            }
        }
        throw HarnessError("no subscription reached the publisher within \(timeout) s")
    }
}
