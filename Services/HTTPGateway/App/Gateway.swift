import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import LHTClient
import LHTSchema
import LHTSecurity
import Logging
import NIOCore
import ZeroMQ

/// The gateway: HTTP in front, an `UpstreamPool` per service and the `EventHub` behind.
public final class Gateway: @unchecked Sendable {
    let settings: GatewaySettings
    let logger: Logger
    let context: Context
    let pools: [ServiceName: UpstreamPool]
    let hub: EventHub
    let tokens: TokenTable?
    let streaming: EventStreaming
    let metrics = GatewayMetrics()
    /// Requests being forwarded now, so a stop can let them finish.
    private let inFlight = InFlight()

    public init(settings: GatewaySettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        context = try Context()
        var pools: [ServiceName: UpstreamPool] = [:]
        for (service, endpoints) in settings.upstreams {
            pools[service] = try UpstreamPool(context: context, endpoints: endpoints.api, credentials: settings.credentials(for: service),
                                              name: service.flagStem)
        }
        self.pools = pools
        hub = EventHub(context: context, upstreams: settings.upstreams, credentials: settings.credentials(for:), logger: logger)
        tokens = settings.keys.map { TokenTable(store: TokenStore(keys: $0)) }
        streaming = EventStreaming(hub: hub, pools: pools, keepaliveSeconds: settings.keepaliveSeconds, metrics: metrics)
    }

    /// Serves until the process is stopped; `ready` gets the bound address once the server listens.
    public func run(ready: @escaping @Sendable (String) -> Void) async throws {
        let router = Router(context: GatewayContext.self)
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        if let origin = settings.allowOrigin {
            router.add(middleware: CORSMiddleware(allowOrigin: origin == "*" ? .all : .oneOf(origin),
                                                  allowHeaders: [.accept, .authorization, .contentType, .lastEventID],
                                                  allowMethods: [.get, .post, .options]))
        }
        if let web = settings.webDirectory {
            router.add(middleware: FileMiddleware(web, searchForIndexHtml: true, logger: logger))
        }
        router.get("/healthz") { [self] _, _ in await healthz() }
        router.post("/v1/:op") { [self] request, context in await forward(request, context: context) }
        router.get("/v1/events") { [self] request, context in await events(request, context: context) }
        let server: HTTPServerBuilder = try settings.tls.map { tls in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.key, format: .pem)))
            configuration.minimumTLSVersion = .tlsv12
            return try .tls(.http1(configuration: Self.http1), tlsConfiguration: configuration)
        } ?? .http1(configuration: Self.http1)
        let scheme = settings.tls == nil ? "http" : "https"
        let app = Application(router: router, server: server,
                              configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: nil),
                              onServerRunning: { channel in
                                  let port = channel.localAddress?.port ?? 0
                                  let host = self.settings.host.contains(":") ? "[\(self.settings.host)]" : self.settings.host
                                  ready("\(scheme)=\(host):\(port)")
                              }, logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }

    /// Each connection gets its own watcher for the client hanging up (the autoclosure runs per connection).
    static var http1: HTTP1Channel.Configuration { .init(additionalChannelHandlers: [HangUpWatcher()]) }

    /// Stopping: streams end, forwarded requests get up to `seconds` to be answered.
    public func stop(waiting seconds: Double) {
        hub.stop()
        tokens?.stop()
        let deadline = Date().addingTimeInterval(seconds)
        while inFlight.count > 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        for pool in pools.values { pool.stop() }
    }

    // MARK: Handlers

    private func healthz() async -> Response {
        let answered = await withTaskGroup(of: (ServiceName, Bool).self) { group in
            for (service, pool) in pools {
                group.addTask {
                    let frame = Forwarding.requestFrame(op: Ops.health.name, body: Data(), as: nil)!
                    let reply = await pool.exchange(frame, timeoutMilliseconds: 2000)
                    return (service, reply.map { Forwarding.status(of: $0) == 200 } ?? false)
                }
            }
            var all: [ServiceName: Bool] = [:]
            for await (service, ok) in group { all[service] = ok }
            return all
        }
        let silent = ServiceName.allCases.filter { answered[$0] == false }.map(\.rawValue)
        let services = ServiceName.allCases.compactMap { service -> String? in
            guard let ok = answered[service] else { return nil }
            return "\"\(service.rawValue)\":" + (ok ? "\"ok\"" : "\"no answer\"")
        }
        let body = "{\"ok\":\(silent.isEmpty),\"services\":{\(services.joined(separator: ","))}}"
        return Response(status: silent.isEmpty ? .ok : .serviceUnavailable,
                        headers: silent.isEmpty ? [.contentType: "application/json"] : [.contentType: "application/json", .retryAfter: "5"],
                        body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// The caller a `/v1/` request acts for: the token's user with keys (nil: refused), else `named`.
    enum Caller {
        case user(UserID, key: String)
        case anyone
        case refused
    }

    func caller(_ request: Request, context: GatewayContext) -> Caller {
        guard let tokens else { return .anyone }
        if let entry = tokens.entry(authorization: request.headers[.authorization]) { return .user(entry.userId, key: entry.label) }
        metrics.refusedToken()
        if tokens.shouldLog(refusalFrom: context.peer) {
            logger.warning("refused a request without a valid token", metadata: ["peer": "\(context.peer)", "path": "\(request.uri.path)"])
        }
        return .refused
    }

    static func failure(_ status: HTTPResponse.Status, _ error: WireError, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(data: Reply.failure(error))))
    }

    static let unauthenticated = failure(.unauthorized, WireError(.unauthorized, "a valid token is required: Authorization: Bearer <token> (lht tokens add)"),
                                         headers: [.wwwAuthenticate: "Bearer"])

    func track<T>(_ work: () async -> T) async -> T {
        inFlight.add(1)
        defer { inFlight.add(-1) }
        return await work()
    }
}

/// A counter shared by the handlers.
final class InFlight: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    var count: Int { lock.withLock { value } }
    func add(_ delta: Int) { lock.withLock { value += delta } }
}
