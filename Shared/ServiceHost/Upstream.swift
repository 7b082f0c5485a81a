import Foundation
import GRDB
import LHTSchema
import Logging
import ZeroMQ

/// A request/reply client for another service's api, Lazy Pirate style: on a timeout the socket
/// is thrown away and reopened, so a late reply can never be taken for the next request's.
public final class APIClient {
    public let endpoint: String
    private let context: Context
    private var socket: Socket?

    public init(context: Context, endpoint: String) {
        self.context = context
        self.endpoint = endpoint
    }

    private func connected() throws -> Socket {
        if let socket { return socket }
        let socket = try Socket(context, .dealer)
        try socket.connect(endpoint)
        self.socket = socket
        return socket
    }

    /// Sends one request and waits up to `timeoutMilliseconds` for its reply frame.
    /// Nil when the service did not answer in time (or the transport failed).
    public func call(_ requestFrame: Data, timeoutMilliseconds: Int) -> Data? {
        do {
            let socket = try connected()
            try socket.send(multipart: [Data(), requestFrame])
            let deadline = Date().addingTimeInterval(Double(timeoutMilliseconds) / 1000)
            while true {
                let remaining = Int(deadline.timeIntervalSinceNow * 1000)
                guard remaining > 0, try Poller.readable([socket], timeoutMilliseconds: remaining)[0] else { break }
                if let frames = try socket.receiveMultipart(dontWait: true), let body = frames.last { return body }
            }
        } catch {
            // Fall through: treated like a timeout.
        }
        socket = nil
        return nil
    }

    /// Encodes `data` as a request for `op`, calls, and decodes the reply.
    public func call<Payload: Encodable, Result: Decodable>(_ op: String, _ data: Payload, as result: Result.Type,
                                                            timeoutMilliseconds: Int) -> Swift.Result<Result, WireError> {
        guard let body = try? wireEncoder().encode(RequestFrame(op: op, data: data)) else {
            return .failure(WireError(.internal, "request for \(op) could not be encoded"))
        }
        guard let reply = call(body, timeoutMilliseconds: timeoutMilliseconds) else {
            return .failure(WireError(.unavailable, "\(endpoint) did not answer \(op) within \(timeoutMilliseconds) ms"))
        }
        guard let frame = try? JSONDecoder().decode(ReplyFrame<Result>.self, from: reply) else {
            return .failure(WireError(.internal, "\(endpoint) sent an unreadable reply to \(op)"))
        }
        if frame.ok, let data = frame.data { return .success(data) }
        return .failure(frame.error ?? WireError(.internal, "\(endpoint) replied without data"))
    }
}

/// The first fields of any envelope, read before a consumer decodes the payload it cares about.
public struct EventHeader: Decodable, Sendable {
    public let type: String
    public let seq: Int64
}

/// Follows another service's events exactly once and in order: a SUB for live events, and
/// `events.since` for what it missed (a gap, a late start, a restart). The applied seq is stored
/// with the state it produced (`Transaction.setCursor`), so a restart neither skips nor repeats.
public final class UpstreamFeed {
    public typealias Apply = (_ header: EventHeader, _ envelope: Data, _ tx: Transaction) throws -> Void

    public let name: String
    public private(set) var appliedSeq: Int64
    /// The upstream's newest seq as last seen; above `appliedSeq` means we know we are behind.
    public private(set) var upstreamSeq: Int64 = 0
    private let host: ServiceHost
    private let subscriber: Socket
    private let client: APIClient
    private let apply: Apply
    private var lastSync = Date.distantPast
    /// How long `catchUpIfQuiet` waits between tries; doubled while the upstream does not answer,
    /// so a service whose upstream is down does not stall its own loop every few seconds.
    private var quietInterval: TimeInterval = 2

    /// Subscribes to everything the upstream publishes: filtering by type happens here, since a
    /// topic filter would turn every other type's seq into a false gap.
    public init(name: String, host: ServiceHost, eventsEndpoint: String, apiEndpoint: String, apply: @escaping Apply) throws {
        self.name = name
        self.host = host
        self.apply = apply
        subscriber = try Socket(host.context, .sub)
        try subscriber.setReceiveHighWaterMark(1_000_000)
        try subscriber.subscribe("")
        try subscriber.connect(eventsEndpoint)
        client = APIClient(context: host.context, endpoint: apiEndpoint)
        appliedSeq = try host.read { db in
            try EventLog.cursor(name, in: db)
        }
        host.watch(subscriber) { [unowned self] in self.receiveLive() }
    }

    /// Asks the upstream for everything after `appliedSeq` until caught up. False when it did not
    /// answer within `timeoutMilliseconds` for a page: then we cannot know what we missed.
    @discardableResult
    public func catchUp(timeoutMilliseconds: Int = 2000) -> Bool {
        lastSync = Date()
        while true {
            let page = client.call("events.since", EventsSinceRequest(after: appliedSeq, limit: 1000),
                                   as: EventsSinceReply<JSONValue>.self, timeoutMilliseconds: timeoutMilliseconds)
            guard case .success(let reply) = page else {
                host.logger.warning("upstream did not answer events.since", metadata: ["upstream": "\(name)"])
                return false
            }
            upstreamSeq = reply.lastSeq
            if reply.lastSeq < appliedSeq {
                // The upstream lost its log (a new data dir): follow it from where it is now.
                host.logger.error("upstream seq went backwards", metadata: ["upstream": "\(name)", "applied": "\(appliedSeq)", "upstreamLast": "\(reply.lastSeq)"])
                appliedSeq = reply.lastSeq
            }
            let envelopes = reply.events.compactMap { event in
                (try? wireEncoder().encode(event)).map { (EventHeader(type: event.type, seq: event.seq), $0) }
            }
            let before = appliedSeq
            applyInOrder(envelopes)
            if reply.events.isEmpty || appliedSeq >= reply.lastSeq {
                return true
            }
            // Nothing applied (storage trouble, or an event we could not read): try again later
            // rather than asking for the same page forever.
            guard appliedSeq > before else { return false }
        }
    }

    /// Catches up after a quiet spell, so the last event of a burst is never left behind.
    public func catchUpIfQuiet() {
        guard Date().timeIntervalSince(lastSync) >= quietInterval else { return }
        quietInterval = catchUp(timeoutMilliseconds: 500) ? 2 : min(quietInterval * 2, 60)
    }

    private func receiveLive() {
        var received: [(EventHeader, Data)] = []
        while received.count < 1024, let frames = try? subscriber.receiveMultipart(dontWait: true) {
            guard frames.count == 2, let header = try? JSONDecoder().decode(EventHeader.self, from: frames[1]) else {
                host.logger.warning("unreadable upstream event", metadata: ["upstream": "\(name)"])
                continue
            }
            received.append((header, frames[1]))
        }
        lastSync = Date()  // live events count as hearing from the upstream
        guard let first = received.first(where: { $0.0.seq > appliedSeq }) else { return }
        upstreamSeq = max(upstreamSeq, received.last!.0.seq)
        if first.0.seq != appliedSeq + 1 {
            catchUp()  // a gap: fetch what was missed; events already applied are skipped below
        }
        applyInOrder(received)
    }

    /// Applies the events that extend `appliedSeq` without a gap, in one transaction.
    private func applyInOrder(_ events: [(EventHeader, Data)]) {
        let next = events.filter { $0.0.seq > appliedSeq }.sorted { $0.0.seq < $1.0.seq }
        guard let first = next.first, first.0.seq == appliedSeq + 1 else { return }
        var through = appliedSeq
        do {
            try host.write { tx in
                for (header, envelope) in next {
                    guard header.seq == through + 1 else { break }
                    do {
                        try tx.isolated { try apply(header, envelope, tx) }
                    } catch let error as DatabaseError {
                        throw error  // storage trouble: apply nothing, and retry from the cursor later
                    } catch {
                        // A payload this service cannot use must not block the feed behind it forever.
                        host.logger.error("upstream event skipped", metadata: ["upstream": "\(name)", "seq": "\(header.seq)", "error": "\(error)"])
                    }
                    through = header.seq
                }
                try tx.setCursor(name, through)
            }
            appliedSeq = through
        } catch {
            host.logger.error("applying upstream events failed", metadata: ["upstream": "\(name)", "error": "\(error)"])
        }
    }
}
