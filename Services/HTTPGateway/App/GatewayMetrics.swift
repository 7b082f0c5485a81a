import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird

/// The gateway's series on its `/metrics`, named as the services' are (`lht_…`): requests by route
/// and status class, their duration, the open streams, the streams cut off, refused tokens.
/// Metric objects are made once per label set and kept; the lock guards the cache only.
final class GatewayMetrics: @unchecked Sendable {
    private let lock = NSLock()
    private var counters: [String: Counter] = [:]
    private var timers: [String: CoreMetrics.Timer] = [:]
    private var openStreams = 0
    // Made with the gateway, after the backend's bootstrap: each family is in the scrape from the start.
    private let streamsOpen = Gauge(label: "lht_event_streams_open")
    private let cutOff = Counter(label: "lht_event_streams_cut_off_total")
    private let tokenRefused = Counter(label: "lht_auth_refused_total", dimensions: [("reason", "token")])

    /// A request answered: `route` from a fixed set (an op of the catalog, "unknown", "events", …).
    func request(route: String, status: Int, nanoseconds: UInt64) {
        let statusClass = "\(status / 100)xx"
        let (counter, timer) = lock.withLock {
            let key = route + "\u{0}" + statusClass
            let counter = counters[key] ?? Counter(label: "lht_http_requests_total", dimensions: [("route", route), ("status", statusClass)])
            counters[key] = counter
            let timer = timers[route] ?? CoreMetrics.Timer(label: "lht_http_request_duration_seconds", dimensions: [("route", route)])
            timers[route] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    func streamOpened() { lock.withLock { openStreams += 1; streamsOpen.record(openStreams) } }

    func streamClosed() { lock.withLock { openStreams -= 1; streamsOpen.record(openStreams) } }

    func streamCutOff() { cutOff.increment() }

    func refusedToken() { tokenRefused.increment() }

    /// The route label of a path: one of a fixed set, so a client cannot grow the label set.
    static func route(of path: String) -> String {
        if path == "/healthz" { return "healthz" }
        if path == "/v1/events" { return "events" }
        if path.hasPrefix("/v1/") {
            let op = String(path.dropFirst(4))
            return Forwarding.service(of: op) == nil ? "unknown" : op
        }
        return "web"
    }
}

/// Times every request and counts it by route and status class (a stream: until its headers).
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: GatewayMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = DispatchTime.now().uptimeNanoseconds
        let route = GatewayMetrics.route(of: request.uri.path)
        do {
            let response = try await next(request, context)
            metrics.request(route: route, status: response.status.code, nanoseconds: DispatchTime.now().uptimeNanoseconds - started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.request(route: route, status: status, nanoseconds: DispatchTime.now().uptimeNanoseconds - started)
            throw error
        }
    }
}
