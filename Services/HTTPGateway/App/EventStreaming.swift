import Foundation
import Hummingbird
import LHTClient
import LHTSchema
import Logging
import NIOCore

/// `GET /v1/events`: replay from each publisher's `events.since` (as the caller) from the cursor,
/// then the live events the hub offers, each once: an event is written only past the cursor.
struct EventStreaming: Sendable {
    enum Format: Sendable { case sse, ndjson }

    static let streamsPerToken = 8
    let hub: EventHub
    let pools: [ServiceName: UpstreamPool]
    let keepaliveSeconds: Double
    let limiter: StreamLimiter

    init(hub: EventHub, pools: [ServiceName: UpstreamPool], keepaliveSeconds: Double, metrics: GatewayMetrics) {
        self.hub = hub
        self.pools = pools
        self.keepaliveSeconds = keepaliveSeconds
        limiter = StreamLimiter(metrics: metrics)
    }

    /// The response for a stream of `user`'s events, or nil when `key` has its 8 streams open already.
    func open(user: UserID, selection: EventSelection, cursor given: EventCursor?, format: Format, key: String,
              cutOff: @escaping @Sendable () -> Void, hungUp: (@escaping @Sendable () -> Void) -> Void) async -> Response? {
        guard limiter.acquire(key) else { return nil }
        let sink = StreamSink(user: user, selection: selection, cutOff: cutOff)
        // A reader that hangs up ends its stream at once, not at the next write.
        hungUp { sink.end() }
        // Registered before the replay is read: whatever the log gets after it reaches the sink.
        hub.register(sink)
        var cursor = given ?? EventCursor()
        if given == nil {
            // A new stream starts at each publisher's newest seq.
            for service in selection.publishers {
                guard let seq = await newestSeq(service, user: user) else {
                    hub.unregister(sink)
                    limiter.release(key)
                    return Response(status: .serviceUnavailable, headers: [.retryAfter: "5", .contentType: "application/json"],
                                    body: .init(byteBuffer: ByteBuffer(data: Reply.failure(WireError(.unavailable, "\(service.rawValue) did not answer")))))
                }
                cursor[service] = seq
            }
        }
        let start = cursor
        let body = ResponseBody { [self] writer in
            defer {
                hub.unregister(sink)
                limiter.release(key)
            }
            var cursor = start
            try await writer.write(ByteBuffer(string: format == .sse ? ": lht events\n\n" : ""))
            for service in selection.publishers {
                guard try await replay(service, sink: sink, cursor: &cursor, format: format, writer: &writer) else {
                    try await writer.finish(nil)
                    return
                }
            }
            // An id alone sets the client's Last-Event-ID without an event (the SSE dispatch rules).
            if format == .sse { try await writer.write(ByteBuffer(string: "id: \(cursor)\n\n")) }
            let keepalive = Task {
                while !Task.isCancelled {
                    try await Task.sleep(nanoseconds: UInt64(keepaliveSeconds * 1e9))
                    sink.offer(.keepalive)
                }
            }
            defer { keepalive.cancel() }
            for await item in sink.items {
                switch item {
                case .keepalive:
                    try await writer.write(ByteBuffer(string: format == .sse ? ": keepalive\n\n" : "\n"))
                case .event(let service, let event):
                    sink.took()
                    guard event.seq > cursor[service] else { continue }
                    cursor[service] = event.seq
                    try await writer.write(Self.message(event, cursor: cursor, format: format))
                }
            }
            try await writer.finish(nil)
        }
        let type = format == .sse ? "text/event-stream" : "application/x-ndjson"
        return Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"], body: body)
    }

    /// Writes `service`'s events for the sink past `cursor`, page by page; false when the publisher did not answer.
    private func replay(_ service: ServiceName, sink: StreamSink, cursor: inout EventCursor, format: Format,
                        writer: inout any ResponseBodyWriter) async throws -> Bool {
        var after = cursor[service]
        while true {
            guard let body = try? WireJSON.encode(EventPage.request(after: after)),
                  let frame = Forwarding.requestFrame(op: Ops.eventsSince.name, body: body, as: sink.user),
                  let reply = await pools[service]?.exchange(frame, timeoutMilliseconds: 5000),
                  let page = try? EventPage.reply(reply, from: service.rawValue)
            else { return false }
            for event in page.events where event.seq > cursor[service] && sink.selection.wants(type: event.type, topic: event.topic, user: sink.user) {
                cursor[service] = event.seq
                try await writer.write(Self.message(event, cursor: cursor, format: format))
            }
            guard let next = EventPage.next(after: after, page) else {
                cursor[service] = max(cursor[service], page.lastSeq)
                return true
            }
            after = next
        }
    }

    private func newestSeq(_ service: ServiceName, user: UserID) async -> Int64? {
        guard let frame = Forwarding.requestFrame(op: Ops.health.name, body: Data(), as: user),
              let reply = await pools[service]?.exchange(frame, timeoutMilliseconds: 5000) else { return nil }
        return (try? WireJSON.decode(ReplyFrame<HealthReply>.self, from: reply))?.data?.lastSeq
    }

    /// One event as the stream writes it: an SSE message, or an NDJSON line with its cursor.
    static func message(_ event: ReceivedEvent, cursor: EventCursor, format: Format) -> ByteBuffer {
        let envelope = (try? WireJSON.encode(event)) ?? Data("{}".utf8)
        switch format {
        case .sse:
            return ByteBuffer(string: "event: \(event.type)\nid: \(cursor)\ndata: " + String(decoding: envelope, as: UTF8.self) + "\n\n")
        case .ndjson:
            return ByteBuffer(string: "{\"cursor\":\"\(cursor)\"," + String(decoding: envelope.dropFirst(), as: UTF8.self) + "\n")
        }
    }
}

/// At most `EventStreaming.streamsPerToken` streams open per token (per user without keys).
final class StreamLimiter: @unchecked Sendable {
    private let lock = NSLock()
    private var open: [String: Int] = [:]
    private let metrics: GatewayMetrics

    init(metrics: GatewayMetrics) { self.metrics = metrics }

    func acquire(_ key: String) -> Bool {
        lock.withLock {
            guard open[key, default: 0] < EventStreaming.streamsPerToken else { return false }
            open[key, default: 0] += 1
            metrics.streamOpened()
            return true
        }
    }

    func release(_ key: String) {
        lock.withLock {
            open[key, default: 1] -= 1
            if open[key] == 0 { open[key] = nil }
            metrics.streamClosed()
        }
    }
}
