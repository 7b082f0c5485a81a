import Foundation
import Synchronization
import ZeroMQ

/// Writers on threads of their own, each sending one kind of request to one endpoint about 50
/// times a second until stopped, keeping the ids acknowledged and when the last was. An unanswered
/// or refused request gets a fresh socket and the writer goes on: a paused or failing instance
/// shows as a gap in the acknowledgements.
final class SteadyWriters: Sendable {
    private let context: Context
    private let acks = Mutex<[String: (ids: [String], last: Date)]>([:])
    private let stopping = Atomic(false)
    private let running = DispatchGroup()

    init(context: Context) { self.context = context }

    /// `request(n)`: the n-th request's op and data; the id acknowledged is the reply's `id`, else the request's.
    func start(_ name: String, endpoint: String, _ request: @escaping @Sendable (Int) -> (String, [String: Any])) {
        acks.withLock { $0[name] = ([], Date.distantPast) }
        running.enter()
        let context = context
        Thread { [self] in
            defer { running.leave() }
            var client = try? WireClient(endpoint, context: context)
            var n = 0
            while !stopping.load(ordering: .relaxed) {
                n += 1
                let (op, data) = request(n)
                guard let writer = client, let reply = try? writer.ok(op, data),
                      let id = reply["id"]?.stringValue ?? data["id"] as? String else {
                    client = try? WireClient(endpoint, context: context)
                    Thread.sleep(forTimeInterval: 0.05)  // backs off before reconnecting
                    continue
                }
                acks.withLock { $0[name]?.ids.append(id); $0[name]?.last = Date() }
                Thread.sleep(forTimeInterval: 0.02)  // a steady writer, not a flood
            }
        }.start()
    }

    func lastAck(_ name: String) -> Date { acks.withLock { $0[name]?.last ?? .distantPast } }
    func acknowledged(_ name: String) -> [String] { acks.withLock { $0[name]?.ids ?? [] } }

    /// Stops every writer and waits for the requests under way (each at most a call's timeout).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        _ = running.wait(timeout: .now() + 15)
    }
}
