import Foundation
import LHTClient
import LHTSchema
import Logging
import ZeroMQ

/// Every publisher's events, followed once for all streams: one thread owns a `Subscription` per
/// publisher (its SUB and its `events.since` client) for its whole life, so each publisher's events
/// reach the streams complete and in seq order, gaps fetched by the Subscription itself.
final class EventHub: @unchecked Sendable {
    private let lock = NSLock()
    private var sinks: [ObjectIdentifier: StreamSink] = [:]
    private var stopped = false
    private let logger: Logger

    init(context: Context, upstreams: [ServiceName: (api: [String], events: [String])],
         credentials: @escaping @Sendable (ServiceName) -> CurveCredentials?, logger: Logger) {
        self.logger = logger
        let thread = Thread { [self] in
            var followed: [(ServiceName, Subscription)] = []
            for service in ServiceName.allCases {
                guard let endpoints = upstreams[service] else { continue }
                // From the publisher's newest seq: streams replay what came before from the log.
                let probe = ServiceClient(context: context, endpoints: endpoints.api, credentials: credentials(service))
                let newest = try? probe.call(Ops.health, NoFields(), timeoutMilliseconds: 1000).lastSeq
                do {
                    followed.append((service, try Subscription(context: context, eventsEndpoints: endpoints.events, apiEndpoints: endpoints.api,
                                                              prefixes: [""], after: newest, credentials: credentials(service))))
                } catch {
                    logger.error("cannot follow \(service.rawValue)'s events", metadata: ["error": "\(error)"])
                }
            }
            follow(followed)
        }
        thread.name = "event-hub"
        thread.start()
    }

    private func follow(_ followed: [(ServiceName, Subscription)]) {
        while !lock.withLock({ stopped }) {
            guard let readable = try? Poller.readable(followed.map { $0.1.follower.subscriber }, timeoutMilliseconds: 250) else { continue }
            for ((service, subscription), ready) in zip(followed, readable) where ready {
                do {
                    dispatch(service, try subscription.next(timeoutMilliseconds: 0))
                } catch {
                    logger.debug("\(service.rawValue) did not answer events.since; trying again", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    private func dispatch(_ service: ServiceName, _ events: [ReceivedEvent]) {
        guard !events.isEmpty else { return }
        let current = lock.withLock { Array(sinks.values) }
        for event in events {
            for sink in current where sink.selection.wants(type: event.type, topic: event.topic, user: sink.user) {
                sink.offer(.event(service, event))
            }
        }
    }

    func register(_ sink: StreamSink) { lock.withLock { sinks[ObjectIdentifier(sink)] = sink } }

    func unregister(_ sink: StreamSink) { _ = lock.withLock { sinks.removeValue(forKey: ObjectIdentifier(sink)) } }

    /// Ends every stream (the gateway is stopping) and the thread.
    func stop() {
        let all = lock.withLock {
            stopped = true
            return Array(sinks.values)
        }
        for sink in all { sink.end() }
    }
}

/// One open stream's inbox: the hub offers it events, a timer keepalives; a stream that lets
/// more than `limit` events wait is ended (its reader stopped reading), so memory stays bounded.
final class StreamSink: @unchecked Sendable {
    enum Item: Sendable {
        case event(ServiceName, ReceivedEvent)
        case keepalive
    }

    static let limit = 1000
    let user: UserID
    let selection: EventSelection
    let items: AsyncStream<Item>
    private let continuation: AsyncStream<Item>.Continuation
    private let lock = NSLock()
    private var waiting = 0
    private(set) var overflowed = false
    /// Closes the connection: a reader that stopped reading also stops a write in progress.
    private let cutOff: @Sendable () -> Void

    init(user: UserID, selection: EventSelection, cutOff: @escaping @Sendable () -> Void) {
        self.user = user
        self.selection = selection
        self.cutOff = cutOff
        (items, continuation) = AsyncStream.makeStream(of: Item.self)
    }

    func offer(_ item: Item) {
        let overflow: Bool = lock.withLock {
            guard !overflowed else { return false }
            if case .event = item { waiting += 1 }
            if waiting > Self.limit { overflowed = true }
            return overflowed
        }
        if overflow {
            continuation.finish()
            cutOff()
        } else {
            continuation.yield(item)
        }
    }

    /// The consumer took an event off.
    func took() { lock.withLock { waiting -= 1 } }

    func end() { continuation.finish() }
}
