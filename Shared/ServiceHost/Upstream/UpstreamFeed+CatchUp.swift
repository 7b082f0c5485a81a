import Foundation
import LHTClient
import LHTSchema
import Logging
import Storage
import ZeroMQ

// Catching up with `events.since`: waiting at start-up, page by page in the background while the
// loop runs, and waiting out a known gap. Two engines, one page (`EventPage`): start-up has no loop
// yet and blocks, so a reader thread fetches ahead; in the background the loop's own client must
// not block it.
extension UpstreamFeed {
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

    func fetchMissed(timeoutMilliseconds: Int) -> Bool {
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
    func readAhead(after seq: Int64, timeoutMilliseconds: Int) -> HandOff<EventsSinceReply> {
        let pages = HandOff<EventsSinceReply>(waitingLimit: 4)
        let (context, endpoints, credentials) = (host.context, client.instances.endpoints, client.credentials)
        let reader = Thread {
            let client = ServiceClient(context: context, endpoints: endpoints, credentials: credentials)
            var after = seq
            pages.finish(Result { () throws(WireError) in
                while true {
                    let page = try EventPage.fetch(after: after, from: client, timeoutMilliseconds: timeoutMilliseconds)
                    guard pages.put(page), let last = page.events.last?.seq, last < page.lastSeq else { return }
                    after = last
                }
            })
        }
        reader.name = "events-since-reader"
        reader.start()
        return pages
    }

    enum PageResult { case caughtUp, more, stuck }

    /// Applies one `events.since` page, from the start-up catch-up or a background round alike.
    func take(_ page: EventsSinceReply) -> PageResult {
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

    func fetchPage(timeoutMilliseconds: Int) {
        let after = appliedSeq
        client.call(Ops.eventsSince, EventPage.request(after: after), timeoutMilliseconds: timeoutMilliseconds) { [unowned self] result in
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

    func roundEnded(_ caughtUp: Bool, timeoutMilliseconds: Int) {
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
}
