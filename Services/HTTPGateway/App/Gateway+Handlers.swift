import Foundation
import HTTPTypes
import Hummingbird
import LHTSchema
import NIOCore

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
}

extension Gateway {
    /// `POST /v1/<op>`: the body as the op's data, sent `as` the caller to the service owning the op.
    func forward(_ request: Request, context: GatewayContext) async -> Response {
        await track {
            let op = context.parameters.get("op") ?? ""
            let caller = caller(request, context: context)
            if case .refused = caller { return Self.unauthenticated }
            guard let service = Forwarding.service(of: op), let pool = pools[service] else {
                return Self.failure(.notFound, WireError(.unknownOp, "no op \(op.prefix(80)) is served here", field: "op"))
            }
            let contentType = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            let length = request.headers[.contentLength].flatMap { Int($0) }
            if let length, length > Forwarding.largestBody { return Self.tooLarge(length) }
            var request = request
            guard let buffer = try? await request.collectBody(upTo: Forwarding.largestBody) else { return Self.tooLarge(nil) }
            let body = Data(buffer.readableBytesView)
            // A body needs its type said; an empty one (an op without fields) may leave it out.
            if contentType != "application/json" && !(contentType == nil && body.isEmpty) {
                return Self.failure(.unsupportedMediaType, WireError(.invalidArgument, "the body must be Content-Type: application/json", field: "Content-Type"))
            }
            let user: UserID?
            switch caller {
            case .user(let id, _): user = id
            case .anyone: user = Forwarding.namedUser(in: body)
            case .refused: return Self.unauthenticated
            }
            guard let frame = Forwarding.requestFrame(op: op, body: body, as: user) else {
                return Self.failure(.badRequest, WireError(.badJSON, "the body must be one JSON value (an object with the op's data)"))
            }
            guard let reply = await pool.exchange(frame, timeoutMilliseconds: 5000) else {
                return Self.failure(.serviceUnavailable, WireError(.unavailable, "\(service.rawValue) did not answer within 5 s"), headers: [.retryAfter: "5"])
            }
            let status = Forwarding.status(of: reply)
            var headers: HTTPFields = [.contentType: "application/json"]
            if status == 503 { headers[.retryAfter] = "5" }
            return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(data: reply)))
        }
    }

    static let streamSendBuffer: SocketOptionValue = 64 * 1024

    static func tooLarge(_ size: Int?) -> Response {
        failure(.contentTooLarge, WireError.invalid("request", "a body is at most 1 MiB (1,048,576 bytes)" + (size.map { "; this one has \($0) bytes" } ?? "")))
    }

    /// `GET /v1/events?types=…[&since=cursor]`: the caller's events as SSE, or NDJSON on request.
    func events(_ request: Request, context: GatewayContext) async -> Response {
        let caller = caller(request, context: context)
        let user: UserID, key: String
        switch caller {
        case .refused: return Self.unauthenticated
        case .user(let id, let label):
            user = id
            key = "token " + label
        case .anyone:
            // Without keys a stream names its user, as a request body does.
            guard let named = request.uri.queryParameters.get("userId").flatMap(UserID.init) else {
                return Self.failure(.badRequest, WireError.invalid("userId", "without keys a stream names its user: ?userId=<userId>"))
            }
            user = named
            key = "user " + named.rawValue
        }
        let selection: EventSelection
        do {
            selection = try EventSelection(types: request.uri.queryParameters.get("types"))
        } catch {
            return Self.failure(.badRequest, WireError.invalid("types", error.description))
        }
        var cursor: EventCursor?
        if let given = request.headers[.lastEventID] ?? request.uri.queryParameters.get("since") {
            guard let parsed = EventCursor(given) else {
                return Self.failure(.badRequest, WireError.invalid("since", "\"\(given.prefix(80))\" is not a cursor of this gateway (four seqs: 0.12.7.0)"))
            }
            cursor = parsed
        }
        let ndjson = request.headers[.accept]?.contains("application/x-ndjson") ?? false
        let channel = context.channel, metrics = metrics
        let watcher = try? await channel.pipeline.handler(type: HangUpWatcher.self).get()
        // A stream's kernel send buffer is fixed, not grown by autotuning (up to 4 MiB on Linux): a
        // reader that stops reading then holds little there, and its inbox's limit is what cuts it off.
        try? await channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: Self.streamSendBuffer).get()
        let response = await streaming.open(user: user, selection: selection, cursor: cursor, format: ndjson ? .ndjson : .sse, key: key,
                                            cutOff: {
                                                metrics.streamCutOff()
                                                channel.close(promise: nil)
                                            },
                                            hungUp: { end in
                                                channel.closeFuture.whenComplete { _ in end() }
                                                // The client's hang-up ends the stream and the connection at once.
                                                watcher?.onHangUp {
                                                    end()
                                                    channel.close(promise: nil)
                                                }
                                            })
        return response ?? Self.failure(.tooManyRequests, WireError(.unavailable, "at most \(EventStreaming.streamsPerToken) streams per token at once"),
                                        headers: [.retryAfter: "5"])
    }
}
