import Foundation
import LHTClient
import LHTSchema
import Logging
import ZeroMQ
import Storage

/// Follows another service's events exactly once and in order: live events from the SUB, and
/// `events.since` only when something shows a gap — a live event past the next seq, a heartbeat
/// whose `lastSeq` is ahead, or a publisher silent for three heartbeats (the zguide's Clone
/// pattern). The applied seq is stored with the state it produced (`Transaction.setCursor`), so a
/// restart neither skips nor repeats.
///
/// While the loop runs, a catch-up never holds it: `events.since` goes out on an `UpstreamClient`
/// and each page is applied when it arrives (`catchUpInBackground`). Live events that come
/// meanwhile, or past a gap, are held and applied in seq order once they extend what was applied.
/// Only the start-up catch-up (`catchUp`, before the ready line) waits.
///
/// Seqs mean something only within one history: the cursor keeps the upstream's log identity
/// (`logId`, from `events.since` and heartbeats), and events are applied only from the history it
/// names, checked again after every reconnection. A different identity (the upstream's database was
/// wiped or replaced) halts the feed — an error in the log, `health.counters.upstreamReset`, a
/// metric — until an operator restores the upstream or restarts this service once with
/// `--accept-upstream-reset`, which follows the new history from its start (applying is idempotent).
///
/// A feed `partitioned` by user, on a store instances share, applies each event in full only on the
/// instance that owns its user's partition (`isMine`); the others may keep memory from it. It keeps,
/// per partition, the seq applied through (`partition_cursor`, in the applying transaction), and an
/// instance that takes a partition over goes back to where its last owner was and applies again
/// from there, for that partition; so nothing its last owner did not apply is lost, nothing twice.
public final class UpstreamFeed {
    public typealias Apply = (_ event: ReceivedEvent, _ tx: Transaction) throws -> Void

    public let upstream: ServiceName
    public internal(set) var appliedSeq: Int64
    /// The identity of the upstream log `appliedSeq` counts in; nil until first heard.
    var followedLog: RecordID?
    /// Set when the upstream turned out to have a different history: nothing more is applied.
    public internal(set) var halted = false
    /// The SUB connections whose publisher has been checked to be the followed history.
    var verifiedConnections = 0
    let host: ServiceHost
    let follower: EventFollower
    let client: UpstreamClient
    let apply: Apply
    /// Live events past `appliedSeq` not applied yet (a gap before them, or a catch-up in flight).
    var held: [ReceivedEvent] = []
    static let heldLimit = 100_000
    /// Whether an `events.since` round is in flight, who waits for it, and who waits for the next.
    public internal(set) var isCatchingUp = false
    var waiting: [(Bool) -> Void] = []
    var waitingForNext: [(Bool) -> Void]?
    /// When work that needs what the upstream is known to have began waiting for it (`waitsForKnownGap`).
    var gapWaitStarted: UInt64?
    var gapWaitEnded = false
    var lastAttempt = Date.distantPast
    /// How long to wait before asking a silent or failing upstream again; doubled while it does
    /// not answer, so a service whose upstream is down does not stall its own loop every turn.
    var retryInterval: TimeInterval = minimumRetry
    static let minimumRetry: TimeInterval = 2
    /// `health.counters` entry of the halts.
    static let resetCounter = "upstreamReset"
    /// For a partitioned feed on a shared store: per partition, the seq its events are applied
    /// through (by this instance, for those it owns; else as last stored). Nil: not partitioned.
    var partitionFloors: [Int64]?
    var balance = BalanceCadence()
    /// Called with the partitions this instance newly holds, before their events are applied again:
    /// to read what their last owner left in the store.
    public var onTakeOver: ((PartitionSet) throws -> Void)?

    /// Subscribes to everything the upstream publishes, at every instance of it: filtering by type
    /// happens in `apply`, since a topic filter would turn every other type's seq into a false gap.
    public init(upstream: ServiceName, host: ServiceHost, eventsEndpoints: [String], apiEndpoints: [String], partitioned: Bool = false,
                apply: @escaping Apply) throws {
        self.upstream = upstream
        self.host = host
        self.apply = apply
        follower = try EventFollower(context: host.context, eventsEndpoints: eventsEndpoints, apiEndpoints: apiEndpoints,
                                     credentials: host.credentials(for: upstream))
        client = try UpstreamClient(host: host, upstream: upstream, endpoints: apiEndpoints)
        (appliedSeq, followedLog) = try host.store.cursor(upstream.rawValue)
        if partitioned, host.store.isShared {
            // Every instance follows from where the slowest partition is: what its owner has not
            // applied yet, the others may still keep in memory.
            let floors = try startPartitionCursors()
            partitionFloors = floors
            appliedSeq = floors.min()!
            balance.balancing()
            _ = try host.store.balancePartitions()
        }
        host.watch(follower.subscriber) { [unowned self] in receiveLive() }
        host.follow(self)
        host.upstreamProgressed(self)
    }

    /// The upstream's newest seq as last seen; above `appliedSeq` means we know we are behind.
    public var upstreamSeq: Int64 { follower.publisherSeq }

    /// Called every loop turn: balances the partitions when due; catches up when a heartbeat showed
    /// we are behind, or when the upstream has been silent (it may have restarted), at most every `retryInterval`.
    func tick() {
        balancePartitionsIfDue()
        guard !isCatchingUp, !halted else { return }
        let behind = follower.publisherSeq > appliedSeq
        guard behind || follower.isSilent, Date().timeIntervalSince(lastAttempt) >= retryInterval else { return }
        catchUpInBackground(timeoutMilliseconds: behind ? 2000 : 500)
    }

    func receiveLive() {
        let received = follower.drain()
        if follower.unreadable > 0, received.isEmpty {
            host.logger.warning("unreadable upstream message", metadata: ["upstream": "\(upstream)", "count": "\(follower.unreadable)"])
        }
        defer { host.upstreamProgressed(self) }  // heartbeats move the upstream's seq too
        guard follows(follower.heartbeatLogId) else { return }
        held += received.filter { $0.seq > appliedSeq }
        if held.count > Self.heldLimit { held.removeFirst(held.count - Self.heldLimit) }
        guard !held.isEmpty else { return }
        applyHeld()
        // A gap before what is still held: fetch what was missed (the held events follow it).
        if !held.isEmpty, !isCatchingUp { catchUpInBackground() }
    }

    /// Applies what is held as far as it extends `appliedSeq` without a gap, and forgets what is applied.
    func applyHeld() {
        guard !held.isEmpty else { return }
        // A new connection may be to another publisher: held until a page shows whose history it is.
        guard verifiedConnections == follower.connections else {
            if !isCatchingUp { catchUpInBackground() }
            return
        }
        applyInOrder(held)
        held.removeAll { $0.seq <= appliedSeq }
    }

    /// Applies the events that extend `appliedSeq` without a gap, and the cursor, in one transaction.
    /// Storage trouble applies nothing (the next round retries from the cursor); a payload this
    /// service cannot use is skipped, so it cannot block the feed behind it forever.
    func applyInOrder(_ events: [ReceivedEvent]) {
        guard !halted else { return }
        // Pages and live batches come in seq order, usually all of them new: then nothing is copied
        // (filtering, sorting and collecting them copied every event more than once).
        let inOrder = events.indices.dropFirst().allSatisfy { events[$0 - 1].seq < events[$0].seq }
        let ordered = inOrder ? events : Self.eachSeqOnce(events)
        guard let start = ordered.firstIndex(where: { $0.seq > appliedSeq }) else { return }
        var end = start
        while end < ordered.count, ordered[end].seq == appliedSeq + 1 + Int64(end - start) { end += 1 }
        guard end > start else { return }
        let contiguous = start == 0 && end == ordered.count ? ordered : Array(ordered[start..<end])
        let lastSeq = contiguous[contiguous.count - 1].seq
        do {
            let owned = host.store.ownedPartitions
            try host.write(copyOfUpstream: true) { tx in
                // The cursor first: on PostgreSQL the server stores it while the events are worked
                // out, not after the last one's rows.
                try tx.setCursor(upstream.rawValue, lastSeq, logId: followedLog)
                if partitionFloors != nil, !owned.isEmpty {
                    try tx.sql.executeLater("UPDATE partition_cursor SET seq = ? WHERE upstream = ? AND seq < ? AND partition_index IN (\(owned.sqlList))",
                                            [.integer(lastSeq), .text(upstream.rawValue), .integer(lastSeq)])
                }
                // A backlog (a page, events held while the loop waited) may take long: the host
                // answers `health` between its events (`Transaction.betweenItems`).
                let results = try tx.eachIsolated(contiguous, isFatal: StoreUnavailable.endsTransaction) { try apply($0, tx) }
                for (index, result) in results.enumerated() {
                    if case .failure(let error) = result {
                        host.recordError("upstream event skipped", ["upstream": "\(upstream)", "seq": "\(contiguous[index].seq)", "error": "\(error)"])
                    }
                }
            }
            appliedSeq = lastSeq
            for partition in owned where partitionFloors != nil { partitionFloors![partition] = max(partitionFloors![partition], lastSeq) }
        } catch {
            host.recordError("applying upstream events failed", ["upstream": "\(upstream)", "error": "\(error)"])
        }
    }

    /// `events` in seq order, each seq once: live events held from several instances of the upstream
    /// come out of order, and one relayed or connected twice comes twice; a copy must not end the run.
    static func eachSeqOnce(_ events: [ReceivedEvent]) -> [ReceivedEvent] {
        var ordered: [ReceivedEvent] = []
        ordered.reserveCapacity(events.count)
        for event in events.sorted(by: { $0.seq < $1.seq }) where ordered.last?.seq != event.seq { ordered.append(event) }
        return ordered
    }
}
