import Foundation
import GRDB
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
    public private(set) var appliedSeq: Int64
    /// The identity of the upstream log `appliedSeq` counts in; nil until first heard.
    private var followedLog: RecordID?
    /// Set when the upstream turned out to have a different history: nothing more is applied.
    public private(set) var halted = false
    /// The SUB connections whose publisher has been checked to be the followed history.
    private var verifiedConnections = 0
    private let host: ServiceHost
    private let follower: EventFollower
    private let client: UpstreamClient
    private let apply: Apply
    /// Live events past `appliedSeq` not applied yet (a gap before them, or a catch-up in flight).
    private var held: [ReceivedEvent] = []
    private static let heldLimit = 100_000
    /// Whether an `events.since` round is in flight, who waits for it, and who waits for the next.
    public private(set) var isCatchingUp = false
    private var waiting: [(Bool) -> Void] = []
    private var waitingForNext: [(Bool) -> Void]?
    /// When work that needs what the upstream is known to have began waiting for it (`waitsForKnownGap`).
    private var gapWaitStarted: UInt64?
    private var gapWaitEnded = false
    private var lastAttempt = Date.distantPast
    /// How long to wait before asking a silent or failing upstream again; doubled while it does
    /// not answer, so a service whose upstream is down does not stall its own loop every turn.
    private var retryInterval: TimeInterval = minimumRetry
    private static let minimumRetry: TimeInterval = 2
    /// Events per `events.since` page: the most PROTOCOL allows.
    private static let pageSize = 1000
    /// `health.counters` entry of the halts.
    static let resetCounter = "upstreamReset"
    /// For a partitioned feed on a shared store: per partition, the seq its events are applied
    /// through (by this instance, for those it owns; else as last stored). Nil: not partitioned.
    private var partitionFloors: [Int64]?
    private var balance = BalanceCadence()
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
            _ = try host.balancePartitions()
        }
        host.watch(follower.subscriber) { [unowned self] in receiveLive() }
        host.follow(self)
        host.upstreamProgressed(self)
    }

    /// The upstream's newest seq as last seen; above `appliedSeq` means we know we are behind.
    public var upstreamSeq: Int64 { follower.publisherSeq }

    /// Asks the upstream for everything after `appliedSeq` until caught up, and waits: only before
    /// the loop runs (start-up). False when it did not answer within `timeoutMilliseconds` for a
    /// page: then we cannot know what we missed.
    @discardableResult
    public func catchUp(timeoutMilliseconds: Int = 2000) -> Bool {
        lastAttempt = Date()
        let caughtUp = fetchMissed(timeoutMilliseconds: timeoutMilliseconds)
        host.upstreamProgressed(self)
        retryInterval = caughtUp ? Self.minimumRetry : min(retryInterval * 2, 60)
        return caughtUp
    }

    private func fetchMissed(timeoutMilliseconds: Int) -> Bool {
        let pages = readAhead(after: appliedSeq, timeoutMilliseconds: timeoutMilliseconds)
        defer { pages.cancel() }
        while true {
            let page: EventsSinceReply
            do {
                // Nil: the reader ended before this side saw a page reach the upstream's newest seq
                // (one of its pages was not applied): not caught up; the loop tries again later.
                guard let next = try pages.take() else { return false }
                page = next
            } catch {
                host.logger.warning("upstream did not answer events.since", metadata: ["upstream": "\(upstream)", "error": "\(error)"])
                return false
            }
            follower.heard(seq: page.lastSeq)
            switch take(page) {
            case .caughtUp: return true
            case .stuck: return false
            case .more: continue
            }
        }
    }

    /// The `events.since` pages after `seq`, fetched and decoded on a thread of its own (with a
    /// socket of its own) while this one applies the page before: a catch-up costs about the
    /// longer of the two instead of their sum. It asks for the page after the last event it got,
    /// and stops after the page that reaches the upstream's newest seq, or at its first error.
    private func readAhead(after seq: Int64, timeoutMilliseconds: Int) -> HandOff<EventsSinceReply> {
        let pages = HandOff<EventsSinceReply>(waitingLimit: 4)
        let (context, endpoints, credentials) = (host.context, client.instances.endpoints, client.credentials)
        let reader = Thread {
            let client = ServiceClient(context: context, endpoints: endpoints, credentials: credentials)
            var after = seq
            pages.finish(Result { () throws(WireError) in
                while true {
                    let page = try client.call(Ops.eventsSince, EventsSinceRequest(after: after, limit: Self.pageSize),
                                               timeoutMilliseconds: timeoutMilliseconds)
                    guard pages.put(page), let last = page.events.last?.seq, last < page.lastSeq else { return }
                    after = last
                }
            })
        }
        reader.name = "events-since-reader"
        reader.start()
        return pages
    }

    private enum PageResult { case caughtUp, more, stuck }

    /// Applies one `events.since` page, from the start-up catch-up or a background round alike.
    private func take(_ page: EventsSinceReply) -> PageResult {
        guard follows(page.logId) else { return .stuck }
        verifiedConnections = follower.connections
        if page.lastSeq < appliedSeq {
            // A publisher that names no log identity lost its log (a new data dir): follow it from where it is now.
            host.recordError("upstream seq went backwards", ["upstream": "\(upstream)", "applied": "\(appliedSeq)", "upstreamLast": "\(page.lastSeq)"])
            appliedSeq = page.lastSeq
            held.removeAll()
        }
        let before = appliedSeq
        applyInOrder(page.events)
        applyHeld()
        if page.events.isEmpty || appliedSeq >= page.lastSeq { return .caughtUp }
        // Nothing applied (storage trouble): try again later rather than asking for the same page forever.
        return appliedSeq > before ? .more : .stuck
    }

    /// Asks the upstream for everything after `appliedSeq` until caught up, without waiting: the
    /// pages are applied on later loop turns as they arrive. `then` is called on the loop thread
    /// with true once caught up, false when a page did not come within `timeoutMilliseconds` (one
    /// try). A round already in flight may have asked before what `then` must see: a caller that
    /// comes during one gets the next round, started as soon as that one ends.
    public func catchUpInBackground(timeoutMilliseconds: Int = 2000, then: ((Bool) -> Void)? = nil) {
        if isCatchingUp {
            if let then { waitingForNext = (waitingForNext ?? []) + [then] }
            return
        }
        isCatchingUp = true
        lastAttempt = Date()
        if let then { waiting.append(then) }
        fetchPage(timeoutMilliseconds: timeoutMilliseconds)
    }

    private func fetchPage(timeoutMilliseconds: Int) {
        let after = appliedSeq
        client.call(Ops.eventsSince, EventsSinceRequest(after: after, limit: Self.pageSize), timeoutMilliseconds: timeoutMilliseconds) { [unowned self] result in
            let page: EventsSinceReply
            switch result {
            case .failure(let error):
                host.logger.warning("upstream did not answer events.since", metadata: ["upstream": "\(upstream)", "error": "\(error)"])
                return roundEnded(false, timeoutMilliseconds: timeoutMilliseconds)
            case .success(let reply):
                page = reply
            }
            follower.heard(seq: page.lastSeq)
            switch take(page) {
            case .caughtUp: roundEnded(true, timeoutMilliseconds: timeoutMilliseconds)
            case .stuck: roundEnded(false, timeoutMilliseconds: timeoutMilliseconds)
            case .more: fetchPage(timeoutMilliseconds: timeoutMilliseconds)
            }
        }
    }

    private func roundEnded(_ caughtUp: Bool, timeoutMilliseconds: Int) {
        isCatchingUp = false
        retryInterval = caughtUp ? Self.minimumRetry : min(retryInterval * 2, 60)
        if !caughtUp { held.removeAll() }  // refetched from the cursor on the next round
        let done = waiting
        waiting = []
        for then in done { then(caughtUp) }
        if let next = waitingForNext {
            waitingForNext = nil
            isCatchingUp = true
            lastAttempt = Date()
            waiting = next
            fetchPage(timeoutMilliseconds: timeoutMilliseconds)
        }
    }

    /// For work that should see everything the upstream is known to have (the planner's decisions,
    /// SEMANTICS §3): true while the caller should wait — a known gap is being fetched and
    /// `limitMilliseconds` since it began waiting have not passed; the caller asks again on a later
    /// turn, and the loop serves meanwhile. Starts that catch-up when needed. False when nothing is
    /// known missing, or when the upstream did not fill the gap in time: go ahead with what we have.
    public func waitsForKnownGap(limitMilliseconds: Int = 2000) -> Bool {
        guard upstreamSeq > appliedSeq else {
            gapWaitStarted = nil
            return false
        }
        let now = DispatchTime.now().uptimeNanoseconds
        guard let started = gapWaitStarted else {
            gapWaitStarted = now
            gapWaitEnded = false
            catchUpInBackground(timeoutMilliseconds: limitMilliseconds) { [unowned self] _ in gapWaitEnded = true }
            if gapWaitEnded { gapWaitStarted = nil }
            return !gapWaitEnded
        }
        if gapWaitEnded || now - started >= UInt64(limitMilliseconds) * 1_000_000 {
            gapWaitStarted = nil
            return false
        }
        return true
    }

    /// Whether work waits on a known gap now (`waitsForKnownGap`): the loop need not wake for it early.
    public var isWaitingForKnownGap: Bool { gapWaitStarted != nil }

    /// Called every loop turn: balances the partitions when due; catches up when a heartbeat showed
    /// we are behind, or when the upstream has been silent (it may have restarted), at most every `retryInterval`.
    public func tick() {
        balancePartitionsIfDue()
        guard !isCatchingUp, !halted else { return }
        let behind = follower.publisherSeq > appliedSeq
        guard behind || follower.isSilent, Date().timeIntervalSince(lastAttempt) >= retryInterval else { return }
        catchUpInBackground(timeoutMilliseconds: behind ? 2000 : 500)
    }

    private func receiveLive() {
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
    private func applyHeld() {
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
    private func applyInOrder(_ events: [ReceivedEvent]) {
        guard !halted else { return }
        // Pages and live batches come in seq order, usually all of them new: then nothing is copied
        // (filtering, sorting and collecting them copied every event three times).
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
                let results = try tx.eachIsolated(contiguous, isFatal: { $0 is DatabaseError }) { try apply($0, tx) }
                for (index, result) in results.enumerated() {
                    if case .failure(let error) = result {
                        host.recordError("upstream event skipped", ["upstream": "\(upstream)", "seq": "\(contiguous[index].seq)", "error": "\(error)"])
                    }
                }
                try tx.setCursor(upstream.rawValue, lastSeq, logId: followedLog)
                if partitionFloors != nil, !owned.isEmpty {
                    try tx.sql.execute("UPDATE partition_cursor SET seq = ? WHERE upstream = ? AND seq < ? AND partition_index IN (\(owned.sqlList))",
                                       [.integer(lastSeq), .text(upstream.rawValue), .integer(lastSeq)])
                }
            }
            appliedSeq = lastSeq
            for partition in owned where partitionFloors != nil { partitionFloors![partition] = max(partitionFloors![partition], lastSeq) }
        } catch {
            host.recordError("applying upstream events failed", ["upstream": "\(upstream)", "error": "\(error)"])
        }
    }

    // MARK: Partitions

    /// Whether this instance applies `seq` in full for `user`: always, unless the feed is
    /// partitioned; then only in a partition it owns and past what is applied there.
    public func isMine(_ user: UserID, seq: Int64) -> Bool {
        guard let partitionFloors else { return true }
        let partition = Ownership.partition(of: user)
        return host.store.ownedPartitions.contains(partition) && seq > partitionFloors[partition]
    }

    /// Each partition's stored seq, made where missing from the feed's cursor (what every
    /// instance applied before the feed was partitioned).
    private func startPartitionCursors() throws -> [Int64] {
        try host.write { tx in
            let rows = (0..<Ownership.partitionCount).map { "(?, \($0), ?)" }.joined(separator: ", ")
            try tx.sql.execute("INSERT INTO partition_cursor (upstream, partition_index, seq) VALUES \(rows) ON CONFLICT DO NOTHING",
                               Array(repeating: [.text(upstream.rawValue), .integer(appliedSeq)], count: Ownership.partitionCount).flatMap { $0 })
            return try storedPartitionCursors(tx.sql)
        }
    }

    /// Each partition's stored seq.
    private func storedPartitionCursors(_ sql: StoreConnection) throws -> [Int64] {
        var floors = Array(repeating: appliedSeq, count: Ownership.partitionCount)
        try sql.forEachRow("SELECT partition_index, seq FROM partition_cursor WHERE upstream = ?", [.text(upstream.rawValue)]) { row in
            if let partition = row.integer(0), let seq = row.integer(1), floors.indices.contains(Int(partition)) { floors[Int(partition)] = seq }
        }
        return floors
    }

    /// Takes this instance's share of the partitions and lets go of the rest; for those it newly
    /// holds, goes back to where their last owner was, and the feed's catch-up applies from there.
    private func balancePartitionsIfDue() {
        guard partitionFloors != nil, balance.isDue else { return }
        balance.balancing()
        do {
            let taken = try host.balancePartitions()
            guard !taken.isEmpty else { return }
            let stored = try host.query(storedPartitionCursors)
            for partition in taken { partitionFloors![partition] = stored[partition] }
            let from = taken.map { stored[$0] }.min()!
            host.logger.notice("took over partitions", metadata: [
                "upstream": "\(upstream)", "taken": "\(taken.count)", "owns": "\(host.store.ownedPartitions.count)", "from": "\(from)"])
            do {
                try onTakeOver?(taken)
            } catch {
                host.recordError("reading the partitions taken over failed", ["upstream": "\(upstream)", "error": "\(error)"])
            }
            // A catch-up round in flight finds its pages past the gap this leaves, and the next round fills it.
            if from < appliedSeq {
                appliedSeq = from
                held.removeAll()
                if !isCatchingUp { catchUpInBackground() }
            }
        } catch {
            host.recordError("balancing the partitions failed; will retry", ["upstream": "\(upstream)", "error": "\(error)"])
        }
    }

    /// `events` in seq order, each seq once: live events held from several instances of the upstream
    /// come out of order, and one relayed or connected twice comes twice; a copy must not end the run.
    private static func eachSeqOnce(_ events: [ReceivedEvent]) -> [ReceivedEvent] {
        var ordered: [ReceivedEvent] = []
        ordered.reserveCapacity(events.count)
        for event in events.sorted(by: { $0.seq < $1.seq }) where ordered.last?.seq != event.seq { ordered.append(event) }
        return ordered
    }

    /// Whether `logId` (the upstream's log identity from a page or a heartbeat; nil from a publisher
    /// that does not say) names the history this feed follows. The first one heard is adopted.
    private func follows(_ logId: RecordID?) -> Bool {
        guard !halted else { return false }
        guard let logId, let followed = followedLog, logId != followed else {
            if followedLog == nil, let logId { followedLog = logId }  // stored with the next cursor
            return true
        }
        held.removeAll()
        if host.acceptUpstreamReset {
            host.logger.warning("the upstream has a new history: following it from its start",
                                metadata: ["upstream": "\(upstream)", "was": "\(followed)", "now": "\(logId)", "applied": "\(appliedSeq)"])
            do {
                try host.write { tx in
                    // The first instance to follow the new history starts every partition at its start too.
                    if partitionFloors != nil, try host.store.cursor(upstream.rawValue).logId != logId {
                        try tx.sql.execute("UPDATE partition_cursor SET seq = 0 WHERE upstream = ?", [.text(upstream.rawValue)])
                    }
                    try tx.setCursor(upstream.rawValue, 0, logId: logId)
                }
                followedLog = logId
                appliedSeq = 0
                if partitionFloors != nil { partitionFloors = try host.query(storedPartitionCursors) }
                return true
            } catch {
                host.recordError("storing the new upstream history failed", ["upstream": "\(upstream)", "error": "\(error)"])
                return false
            }
        }
        halted = true
        host.count(Self.resetCounter)
        host.recordError("the upstream has a different history: not following it", [
            "upstream": "\(upstream)", "was": "\(followed)", "now": "\(logId)", "applied": "\(appliedSeq)",
            "todo": "restore the upstream's data, or restart once with --accept-upstream-reset to follow the new history",
        ])
        return false
    }
}
