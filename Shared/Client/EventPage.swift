import Foundation
import LHTSchema

/// How every follower reads `events.since` a page at a time, whatever carries the request (a
/// `ServiceClient`, a service's `UpstreamClient`, the gateway's pools): the request, the reply,
/// and where the next page starts.
public enum EventPage {
    /// How many events a follower asks for at once: the most PROTOCOL allows.
    public static let size = 1000

    /// The request for the page after `seq`.
    public static func request(after seq: Int64) -> EventsSinceRequest {
        EventsSinceRequest(after: seq, limit: size)
    }

    /// The request that asks only for the publisher's newest seq (`lastSeq`), not for its events.
    public static let newestSeq = EventsSinceRequest(after: 0, limit: 1)

    /// A reply frame from `endpoint` read as a page, or the publisher's refusal.
    public static func reply(_ frame: Data, from endpoint: String) throws(WireError) -> EventsSinceReply {
        try ServiceClient.decodeReply(Ops.eventsSince, frame, from: endpoint)
    }

    /// One page from `client`: the events after `seq`, each decoded once.
    public static func fetch(after seq: Int64, from client: ServiceClient, timeoutMilliseconds: Int) throws(WireError) -> EventsSinceReply {
        try client.call(Ops.eventsSince, request(after: seq), timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The seq to ask after for the page that follows `page` (asked after `seq`); nil when `page`
    /// is the whole rest: it reaches the publisher's newest seq, or it is short, whatever gaps a
    /// topic or user filter left in it.
    public static func next(after seq: Int64, _ page: EventsSinceReply) -> Int64? {
        let last = page.events.last?.seq ?? seq
        return page.events.count < size || last >= page.lastSeq ? nil : last
    }
}
