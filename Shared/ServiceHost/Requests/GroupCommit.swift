import Foundation

/// When the loop runs the requests it has read.
///
/// Requests run in one turn share a transaction and the sync that makes it durable, and a sync
/// rewrites whole pages however little changed in them, so under steady load the first write read
/// waits up to `window` for others to join its turn, as long as others may come (why, measured:
/// docs/decisions/0003-group-commit-window.md):
/// - **load** is writes that come closer together on average than `window`; writes that come
///   seldom run at once, and so do reads, which sync nothing (a turn of reads alone never waits);
/// - **others may come** from a connection answered within the last `window` that has not sent
///   again, or one heard from lately that has sent several requests at once. A client that sends
///   its next request only once it has the last reply (the CLI, a benchmark timing one at a time, a
///   few such workers) has nothing more to send while its request waits: once every such client's
///   request is in, waiting gathers no one. One that went quiet is waited for a window at most.
/// A full batch runs at once too (the loop's own bounds).
///
/// Times are the loop's monotonic clock in nanoseconds, given by the caller; connections are the
/// api socket's routing identities.
public struct GroupCommit: Sendable {
    /// How long the oldest write read under load waits; 0 runs every turn at once.
    public let window: UInt64
    /// The mean gap between writes read (weight 1/8 to the newest). A pause of `4 × window` or
    /// more means the load stopped: the mean starts over from there, so the write after it runs at
    /// once, and about a dozen close writes tell that load is back.
    private(set) var meanGap: UInt64
    private var lastArrival: UInt64?
    /// When the oldest write not yet run was read.
    private var oldestWaiting: UInt64?
    /// The connections that may send again soon (`mayCome`) or have requests unanswered.
    private(set) var connections: [Data: Connection] = [:]

    struct Connection {
        var lastHeard: UInt64
        var lastAnswered: UInt64 = 0
        var unanswered = 0
        /// It had two requests unanswered at once: it does not wait for a reply before it sends.
        var sendsSeveral = false
    }

    public init(windowNanoseconds: UInt64) {
        window = windowNanoseconds
        meanGap = 4 * windowNanoseconds
    }

    /// How long a connection that sends several counts as heard from lately, and the pause that ends the load.
    private var recent: UInt64 { 4 * window }

    /// A request from `connection` was read at `now`. Only one that `writes` (needs a sync) is
    /// load, and waits for others: a turn of reads alone runs at once, as it syncs nothing.
    public mutating func arrived(at now: UInt64, from connection: Data, writes: Bool = true) {
        if writes {
            if let lastArrival {
                let gap = now &- lastArrival
                meanGap = gap >= recent ? recent : (meanGap * 7 + gap) / 8
            }
            lastArrival = now
            if oldestWaiting == nil { oldestWaiting = now }
        }
        var sender = connections[connection] ?? Connection(lastHeard: now)
        sender.lastHeard = now
        if sender.unanswered > 0 { sender.sendsSeveral = true }
        sender.unanswered += 1
        connections[connection] = sender
    }

    /// A request from `connection` was answered at `now`.
    public mutating func answered(_ connection: Data, at now: UInt64) {
        guard var sender = connections[connection], sender.unanswered > 0 else { return }
        sender.unanswered -= 1
        sender.lastAnswered = now
        connections[connection] = sender
    }

    public var isUnderLoad: Bool { meanGap < window }

    /// How much longer the requests read should wait for others; 0: run them now.
    public func nanosecondsLeft(at now: UInt64) -> UInt64 {
        guard let oldestWaiting, isUnderLoad, othersMayCome(at: now) else { return 0 }
        let waited = now &- oldestWaiting
        return waited >= window ? 0 : window - waited
    }

    private func othersMayCome(at now: UInt64) -> Bool { connections.values.contains { mayCome($0, at: now) } }

    private func mayCome(_ sender: Connection, at now: UInt64) -> Bool {
        (sender.unanswered == 0 && now &- sender.lastAnswered < window) || (sender.sendsSeveral && now &- sender.lastHeard < recent)
    }

    /// The requests read so far ran. Forgets the connections that may not come and have nothing unanswered.
    public mutating func ran(at now: UInt64) {
        oldestWaiting = nil
        // Rebuilt only when one goes: a turn that keeps them all allocates nothing.
        func keeps(_ sender: Connection) -> Bool { sender.unanswered > 0 || mayCome(sender, at: now) }
        guard !connections.values.allSatisfy(keeps) else { return }
        connections = connections.filter { keeps($0.value) }
    }
}
