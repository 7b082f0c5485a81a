import CoreMetrics
import Foundation

/// The host's metrics (PROTOCOL "Operations"), emitted through swift-metrics: the executable
/// bootstraps a backend (Prometheus); without one they cost next to nothing. Metric objects are
/// made once per label set and kept, since looking one up in the factory takes a lock.
final class HostMetrics {
    private var requests: [String: Counter] = [:]
    private var durations: [String: CoreMetrics.Timer] = [:]
    private var published: [String: Counter] = [:]
    private var counted: [String: Counter] = [:]
    private var lags: [String: Gauge] = [:]
    private let lastSeq = Gauge(label: "lht_event_log_last_seq")

    /// A request answered: `op` is the catalog name, or "unknown" for an op no one serves, so a
    /// client cannot grow the label set; `outcome` is "ok" or the error code.
    func request(op: String, outcome: String, nanoseconds: UInt64) {
        let key = op + "\u{0}" + outcome
        if requests[key] == nil { requests[key] = Counter(label: "lht_requests_total", dimensions: [("op", op), ("outcome", outcome)]) }
        requests[key]!.increment()
        if durations[op] == nil { durations[op] = CoreMetrics.Timer(label: "lht_request_duration_seconds", dimensions: [("op", op)]) }
        durations[op]!.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    func published(type: String, seq: Int64) {
        if published[type] == nil { published[type] = Counter(label: "lht_events_published_total", dimensions: [("type", type)]) }
        published[type]!.increment()
        lastSeq.record(seq)
    }

    func eventLog(lastSeq seq: Int64) { lastSeq.record(seq) }

    func upstreamLag(_ upstream: String, _ lag: Int64) {
        if lags[upstream] == nil { lags[upstream] = Gauge(label: "lht_upstream_lag_events", dimensions: [("upstream", upstream)]) }
        lags[upstream]!.record(lag)
    }

    /// A service's own counter (`host.count`): `lht_<service counter in snake case>_total`.
    func count(_ name: String, by amount: Int64) {
        if counted[name] == nil { counted[name] = Counter(label: "lht_" + Self.snakeCase(name) + "_total") }
        counted[name]!.increment(by: amount)
    }

    static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase { result += "_" + character.lowercased() } else { result.append(character) }
        }
        return result
    }
}
