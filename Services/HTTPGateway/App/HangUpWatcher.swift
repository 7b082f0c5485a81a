import Foundation
import NIOCore

/// One per connection, in the HTTP pipeline: notices the client closing its side. Hummingbird
/// allows half-closed connections, so a hang-up alone never closes the channel; a stream would
/// only learn of it when its next write failed. Streams register here to end at once instead.
final class HangUpWatcher: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    /// Parts pass through untouched; only the connection's events matter here.
    typealias InboundIn = Any

    private let lock = NSLock()
    private var hungUp = false
    private var actions: [@Sendable () -> Void] = []

    /// Runs `action` once when the client hangs up (at once if it has already).
    func onHangUp(_ action: @escaping @Sendable () -> Void) {
        let now: Bool = lock.withLock {
            if hungUp { return true }
            actions.append(action)
            return false
        }
        if now { action() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { fire() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fire()
        context.fireChannelInactive()
    }

    private func fire() {
        let due: [@Sendable () -> Void] = lock.withLock {
            hungUp = true
            defer { actions = [] }
            return actions
        }
        for action in due { action() }
    }
}
