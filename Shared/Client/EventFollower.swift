import Foundation
import LHTSchema
import ZeroMQ

/// One publisher's events socket and its `events.since`, as a follower sees them: live events
/// decoded once into their catalog types, heartbeats that tell the publisher's newest seq, and
/// pages of what was missed (the zguide's Clone pattern: sequenced updates plus a catch-up).
///
/// It keeps no cursor: the owner decides what "applied" means (a service stores its cursor with the
/// state it produced; `Subscription` delivers to a person). It owns its sockets: one thread only.
public final class EventFollower {
    public let subscriber: Socket
    public let client: ServiceClient
    /// The newest seq the publisher is known to have, from events and heartbeats.
    public private(set) var publisherSeq: Int64 = 0
    /// When the publisher was last heard from (an event or a heartbeat).
    public private(set) var lastHeard = Date.distantPast
    /// Messages that were not a readable event or heartbeat.
    public private(set) var unreadable = 0
    /// The publisher's log identity from its last heartbeat (nil before one, or from an older publisher).
    public private(set) var heartbeatLogId: RecordID?
    private let connectionMonitor: Socket
    private var connectionCount = 0

    /// Subscribes to `prefixes` and, unless one of them is `""`, to heartbeats too, at every instance
    /// of the publisher: each publishes the events it committed (PROTOCOL "Cluster"), so their seqs
    /// may arrive out of order across instances, which an owner treats as it treats a gap.
    public init(context: Context, eventsEndpoints: [String], apiEndpoints: [String], prefixes: [String] = [""],
                credentials: CurveCredentials? = nil) throws {
        subscriber = try Socket(context, .sub)
        try subscriber.setReceiveHighWaterMark(1_000_000)
        try subscriber.secure(with: credentials)
        // Every (re)connection is reported, so an owner can check the publisher is still the one it followed.
        connectionMonitor = try subscriber.monitor(.connected, context: context)
        for prefix in prefixes { try subscriber.subscribe(prefix) }
        if !prefixes.contains("") { try subscriber.subscribe(Heartbeat.topic) }
        for endpoint in eventsEndpoints { try subscriber.connect(endpoint) }
        client = ServiceClient(context: context, endpoints: apiEndpoints, credentials: credentials)
    }

    /// How many times the SUB has connected to the publisher's instances so far (a restarted one is
    /// a new connection). Read before the events it may have brought: `drain` counts them first.
    public var connections: Int {
        while (try? connectionMonitor.receiveMultipart(dontWait: true)) != nil { connectionCount += 1 }
        return connectionCount
    }

    /// Whether nothing, not even a heartbeat, arrived for three heartbeat intervals.
    public var isSilent: Bool { Date().timeIntervalSince(lastHeard) * 1000 > Double(3 * Heartbeat.intervalMilliseconds) }

    /// The events waiting on the socket now (at most `limit` messages), in arrival order.
    public func drain(limit: Int = 1024) -> [ReceivedEvent] {
        var events: [ReceivedEvent] = []
        var read = 0
        // Each message is read where libzmq received it: only its decoded event is kept.
        while read < limit, let event = try? subscriber.withReceivedMultipart(dontWait: true, event(in:)) {
            read += 1
            if let event { events.append(event) }
        }
        return events
    }

    /// The event a message carries; nil for a heartbeat (noted) or anything unreadable (counted).
    private func event(in frames: ReceivedFrames) -> ReceivedEvent? {
        guard frames.count == 2 else {
            unreadable += 1
            return nil
        }
        if frames[0].elementsEqual(Heartbeat.topic.utf8) {
            if let beat = try? WireJSON.decode(Heartbeat.self, fromBytes: frames[1]) {
                heard(seq: beat.lastSeq)
                heartbeatLogId = beat.logId ?? heartbeatLogId
            } else {
                unreadable += 1
            }
            return nil
        }
        guard let event = try? WireJSON.decode(ReceivedEvent.self, fromBytes: frames[1]) else {
            unreadable += 1
            return nil
        }
        heard(seq: event.seq)
        return event
    }

    /// One page from this follower's client, whose newest seq counts as heard.
    public func page(after seq: Int64, timeoutMilliseconds: Int) throws(WireError) -> EventsSinceReply {
        let reply = try EventPage.fetch(after: seq, from: client, timeoutMilliseconds: timeoutMilliseconds)
        heard(seq: reply.lastSeq)
        return reply
    }

    /// Notes that the publisher was heard and has at least `seq` (a page fetched by other means).
    public func heard(seq: Int64) {
        lastHeard = Date()
        publisherSeq = max(publisherSeq, seq)
    }
}

/// A person's or a program's view of a publisher: the events whose topics match, in seq order,
/// each once, with whatever the socket missed (a gap, a slow start, a restart of ours) fetched
/// through `events.since`. Topic filters make seq gaps normal, so after a gap it asks rather than guesses.
public final class Subscription {
    public let follower: EventFollower
    private let prefixes: [String]
    /// Every seq up to here has been looked at (delivered if it matched); nil until the first news.
    public private(set) var checkedThrough: Int64?
    private let timeoutMilliseconds: Int

    /// `after`: deliver events after this seq (0: the whole history); nil: only what comes from now on.
    public init(context: Context, eventsEndpoints: [String], apiEndpoints: [String], prefixes: [String], after: Int64?,
                timeoutMilliseconds: Int = 3000, credentials: CurveCredentials? = nil) throws {
        follower = try EventFollower(context: context, eventsEndpoints: eventsEndpoints, apiEndpoints: apiEndpoints,
                                     prefixes: prefixes, credentials: credentials)
        self.prefixes = prefixes
        checkedThrough = after
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    private func matches(_ topic: String) -> Bool { prefixes.contains { topic.hasPrefix($0) } }

    /// Fetches everything after `checkedThrough` that matches. Throws when the publisher does not answer.
    public func catchUp() throws(WireError) -> [ReceivedEvent] {
        var delivered: [ReceivedEvent] = []
        while true {
            let after = checkedThrough ?? 0
            let page = try follower.page(after: after, timeoutMilliseconds: timeoutMilliseconds)
            delivered += page.events.filter { matches($0.topic) }
            guard let next = EventPage.next(after: after, page) else {
                checkedThrough = max(page.events.last?.seq ?? after, page.lastSeq)
                return delivered
            }
            checkedThrough = next
        }
    }

    /// Waits up to `timeoutMilliseconds` for news and returns the new matching events in seq order
    /// (possibly none). A live event right after `checkedThrough` is taken as it is; anything that
    /// shows a gap (a later seq, a heartbeat ahead of us) is fetched through `events.since`.
    public func next(timeoutMilliseconds wait: Int) throws -> [ReceivedEvent] {
        guard try Poller.readable([follower.subscriber], timeoutMilliseconds: wait)[0] else { return [] }
        var delivered: [ReceivedEvent] = []
        for event in follower.drain() {
            guard let checked = checkedThrough else {
                checkedThrough = event.seq
                if matches(event.topic) { delivered.append(event) }
                continue
            }
            if event.seq <= checked { continue }
            if event.seq == checked + 1 {
                checkedThrough = event.seq
                if matches(event.topic) { delivered.append(event) }
            } else {
                delivered += try catchUp()
            }
        }
        if let checked = checkedThrough, follower.publisherSeq > checked {
            delivered += try catchUp()
        } else if checkedThrough == nil {
            checkedThrough = follower.publisherSeq  // a heartbeat before any event: "from now on" starts here
        }
        return delivered
    }
}
