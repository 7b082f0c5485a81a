import Foundation
import LHTClient
import LHTSchema
import ZeroMQ

/// A test's client for one service's api: LHTClient's `ServiceClient` with a deadline on every call,
/// so a service that does not answer fails the test (`unavailable`) instead of hanging it.
/// Like every socket owner, it belongs to the thread that made it.
public final class TestClient {
    public let client: ServiceClient
    public let timeoutMilliseconds: Int

    public init(context: Context, endpoint: String, timeoutMilliseconds: Int = 5000) {
        client = ServiceClient(context: context, endpoint: endpoint)
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// A client for `service`'s api.
    public convenience init(context: Context, _ service: InProcessService, timeoutMilliseconds: Int = 5000) {
        self.init(context: context, endpoint: service.api, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Calls `op` and returns its typed reply; a refusal throws the service's `WireError`.
    public func call<Input, Output>(_ op: Op<Input, Output>, _ request: Input) throws(WireError) -> Output {
        try client.call(op, request, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Calls `op` expecting a refusal and returns it. Throws `HarnessError` when the call succeeded
    /// or the service did not answer at all.
    public func refusal<Input, Output>(_ op: Op<Input, Output>, _ request: Input) throws -> WireError {
        let reply: Output
        do {
            reply = try client.call(op, request, timeoutMilliseconds: timeoutMilliseconds)
        } catch where error.code == .unavailable {
            throw HarnessError("\(op.name): no answer, where a refusal was expected (\(error.message))")
        } catch {
            return error
        }
        throw HarnessError("\(op.name) succeeded where a refusal was expected: \(String(describing: reply).prefix(300))")
    }
}

/// Every event a publisher sends, in seq order and each once, as LHTClient's `Subscription` delivers
/// them (live events, and `events.since` after a gap or a heartbeat ahead), kept for assertions.
public final class EventRecorder {
    public let subscription: Subscription
    /// Everything delivered so far, in seq order.
    public private(set) var events: [ReceivedEvent] = []

    /// `after`: record events after this seq (0: the whole history). With `catchUpNow`, the history is
    /// fetched at once; otherwise it comes when the socket shows a gap or a heartbeat shows one.
    public init(context: Context, _ service: InProcessService, prefixes: [String] = [""], after: Int64? = 0,
                catchUpNow: Bool = true, timeoutMilliseconds: Int = 5000) throws {
        subscription = try Subscription(context: context, eventsEndpoints: [service.events], apiEndpoints: [service.api],
                                        prefixes: prefixes, after: after, timeoutMilliseconds: timeoutMilliseconds)
        if catchUpNow { events += try subscription.catchUp() }
    }

    /// Receives until `done(events)` holds or `timeout` passes; returns everything recorded so far.
    /// Throws `HarnessError` if the condition does not hold in time.
    @discardableResult
    public func wait(timeout: TimeInterval = 20, _ what: @autoclosure () -> String = "the expected events",
                     until done: ([ReceivedEvent]) -> Bool) throws -> [ReceivedEvent] {
        let deadline = Date().addingTimeInterval(timeout)
        while !done(events) {
            let remaining = Int(deadline.timeIntervalSinceNow * 1000)
            guard remaining > 0 else {
                throw HarnessError("\(what()) did not arrive within \(timeout) s; recorded: \(events.map { "\($0.seq) \($0.topic)" })")
            }
            events += try subscription.next(timeoutMilliseconds: min(remaining, 100))
        }
        return events
    }

    /// Waits for `count` events of `type` (`Events.sessionLogged`) and returns those recorded.
    @discardableResult
    public func wait<Payload>(for type: EventType<Payload>, count: Int = 1, timeout: TimeInterval = 20) throws -> [ReceivedEvent] {
        try wait(timeout: timeout, "\(count) \(type.name) event(s)") { $0.count { $0.type == type.name } >= count }
            .filter { $0.type == type.name }
    }

    /// Keeps receiving for `duration` (to show that nothing more arrives) and returns everything recorded.
    @discardableResult
    public func settle(for duration: TimeInterval) throws -> [ReceivedEvent] {
        let deadline = Date().addingTimeInterval(duration)
        while case let remaining = Int(deadline.timeIntervalSinceNow * 1000), remaining > 0 {
            events += try subscription.next(timeoutMilliseconds: remaining)
        }
        return events
    }

    /// The recorded events of `type`.
    public func of<Payload>(_ type: EventType<Payload>) -> [ReceivedEvent] { events.filter { $0.type == type.name } }
}

/// Polls `condition` every `interval` until it holds; throws `HarnessError` after `timeout`.
public func waitUntil(timeout: TimeInterval = 20, interval: TimeInterval = 0.01, _ what: @autoclosure () -> String,
                      _ condition: () throws -> Bool) throws {
    try waitFor(timeout: timeout, interval: interval, what()) { try condition() ? () : nil }
}

/// Polls `attempt` every `interval` until it gives a value, and returns that; throws `HarnessError`
/// (naming `what`, read at the deadline) after `timeout`.
@discardableResult
public func waitFor<Value>(timeout: TimeInterval = 20, interval: TimeInterval = 0.01, _ what: @autoclosure () -> String,
                           _ attempt: () throws -> Value?) throws -> Value {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if let value = try attempt() { return value }
        guard Date() < deadline else { throw HarnessError("\(what()) did not happen within \(timeout) s") }
        Thread.sleep(forTimeInterval: interval)  // the poll's pace, not a wait on anything
    }
}
