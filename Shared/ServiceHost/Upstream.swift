import Foundation
import GRDB
import LHTClient
import LHTSchema
import Logging
import ZeroMQ

/// Follows another service's events exactly once and in order: live events from the SUB, and
/// `events.since` only when something shows a gap — a live event past the next seq, a heartbeat
/// whose `lastSeq` is ahead, or a publisher silent for three heartbeats (the zguide's Clone
/// pattern). The applied seq is stored with the state it produced (`Transaction.setCursor`), so a
/// restart neither skips nor repeats.
public final class UpstreamFeed {
    public typealias Apply = (_ event: ReceivedEvent, _ tx: Transaction) throws -> Void

    public let upstream: ServiceName
    public private(set) var appliedSeq: Int64
    private let host: ServiceHost
    private let follower: EventFollower
    private let apply: Apply
    private var lastAttempt = Date.distantPast
    /// How long to wait before asking a silent or failing upstream again; doubled while it does
    /// not answer, so a service whose upstream is down does not stall its own loop every turn.
    private var retryInterval: TimeInterval = minimumRetry
    private static let minimumRetry: TimeInterval = 2

    /// Subscribes to everything the upstream publishes: filtering by type happens in `apply`, since a
    /// topic filter would turn every other type's seq into a false gap.
    public init(upstream: ServiceName, host: ServiceHost, eventsEndpoint: String, apiEndpoint: String, apply: @escaping Apply) throws {
        self.upstream = upstream
        self.host = host
        self.apply = apply
        follower = try EventFollower(context: host.context, eventsEndpoint: eventsEndpoint, apiEndpoint: apiEndpoint,
                                     credentials: host.credentials(for: upstream))
        appliedSeq = try host.read { db in try EventLog.cursor(upstream.rawValue, in: db) }
        host.watch(follower.subscriber) { [unowned self] in receiveLive() }
        host.follow(self)
        host.upstreamProgressed(self)
    }

    /// The upstream's newest seq as last seen; above `appliedSeq` means we know we are behind.
    public var upstreamSeq: Int64 { follower.publisherSeq }

    /// Asks the upstream for everything after `appliedSeq` until caught up. False when it did not
    /// answer within `timeoutMilliseconds` for a page: then we cannot know what we missed.
    @discardableResult
    public func catchUp(timeoutMilliseconds: Int = 2000) -> Bool {
        lastAttempt = Date()
        let caughtUp = fetchMissed(timeoutMilliseconds: timeoutMilliseconds)
        host.upstreamProgressed(self)
        retryInterval = caughtUp ? Self.minimumRetry : min(retryInterval * 2, 60)
        return caughtUp
    }

    private func fetchMissed(timeoutMilliseconds: Int) -> Bool {
        while true {
            let page: EventsSinceReply
            do {
                page = try follower.page(after: appliedSeq, timeoutMilliseconds: timeoutMilliseconds)
            } catch {
                host.logger.warning("upstream did not answer events.since", metadata: ["upstream": "\(upstream)", "error": "\(error)"])
                return false
            }
            if page.lastSeq < appliedSeq {
                // The upstream lost its log (a new data dir): follow it from where it is now.
                host.recordError("upstream seq went backwards", ["upstream": "\(upstream)", "applied": "\(appliedSeq)", "upstreamLast": "\(page.lastSeq)"])
                appliedSeq = page.lastSeq
            }
            let before = appliedSeq
            applyInOrder(page.events)
            if page.events.isEmpty || appliedSeq >= page.lastSeq { return true }
            // Nothing applied (storage trouble): try again later rather than asking for the same page forever.
            guard appliedSeq > before else { return false }
        }
    }

    /// Called every loop turn: catches up when a heartbeat showed we are behind, or when the
    /// upstream has been silent (it may have restarted), at most every `retryInterval`.
    public func tick() {
        let behind = follower.publisherSeq > appliedSeq
        guard behind || follower.isSilent, Date().timeIntervalSince(lastAttempt) >= retryInterval else { return }
        catchUp(timeoutMilliseconds: behind ? 2000 : 500)
    }

    private func receiveLive() {
        let received = follower.drain()
        if follower.unreadable > 0, received.isEmpty {
            host.logger.warning("unreadable upstream message", metadata: ["upstream": "\(upstream)", "count": "\(follower.unreadable)"])
        }
        defer { host.upstreamProgressed(self) }  // heartbeats move the upstream's seq too
        guard let first = received.first(where: { $0.seq > appliedSeq }) else { return }
        if first.seq != appliedSeq + 1 {
            catchUp()  // a gap: fetch what was missed; events already applied are skipped below
        }
        applyInOrder(received)
    }

    /// Applies the events that extend `appliedSeq` without a gap, in one transaction.
    private func applyInOrder(_ events: [ReceivedEvent]) {
        let next = events.filter { $0.seq > appliedSeq }.sorted { $0.seq < $1.seq }
        guard let first = next.first, first.seq == appliedSeq + 1 else { return }
        var through = appliedSeq
        do {
            try host.write { tx in
                for event in next {
                    guard event.seq == through + 1 else { break }
                    do {
                        try tx.isolated { try apply(event, tx) }
                    } catch let error as DatabaseError {
                        throw error  // storage trouble: apply nothing, and retry from the cursor later
                    } catch {
                        // A payload this service cannot use must not block the feed behind it forever.
                        host.recordError("upstream event skipped", ["upstream": "\(upstream)", "seq": "\(event.seq)", "error": "\(error)"])
                    }
                    through = event.seq
                }
                try tx.setCursor(upstream.rawValue, through)
            }
            appliedSeq = through
        } catch {
            host.recordError("applying upstream events failed", ["upstream": "\(upstream)", "error": "\(error)"])
        }
    }
}
