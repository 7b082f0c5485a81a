import CoreMetrics
import Foundation

/// The host's metrics (PROTOCOL "Operations"), emitted through swift-metrics: the executable
/// bootstraps a backend (Prometheus); without one they cost next to nothing. Metric objects are
/// made once per label set and kept, since looking one up in the factory takes a lock.
final class HostMetrics {
    private var requests: [String: RequestMetrics] = [:]
    private var published: [String: Counter] = [:]
    private var counted: [String: Counter] = [:]
    private var lags: [String: Gauge] = [:]
    private let lastSeq = Gauge(label: "lht_event_log_last_seq")

    /// A request answered: `op` is the catalog name, or "unknown" for an op no one serves, so a
    /// client cannot grow the label set; `outcome` is "ok" or the error code.
    func request(op: String, outcome: String, nanoseconds: UInt64) {
        // By op, then outcome: two lookups, no key built per request.
        let metrics = requests.value(for: op) { RequestMetrics(op: op) }
        metrics.count(outcome)
        metrics.duration.recordNanoseconds(Int64(clamping: nanoseconds))
    }

    /// One op's series: its duration, and its count by outcome.
    private final class RequestMetrics {
        let op: String
        let duration: CoreMetrics.Timer
        private var counters: [String: Counter] = [:]

        init(op: String) {
            self.op = op
            duration = CoreMetrics.Timer(label: "lht_request_duration_seconds", dimensions: [("op", op)])
        }

        func count(_ outcome: String) {
            counters.value(for: outcome) { Counter(label: "lht_requests_total", dimensions: [("op", op), ("outcome", outcome)]) }.increment()
        }
    }

    /// `count` events of `type` published, the last of them `lastSeq`.
    func published(type: String, count: Int64, lastSeq seq: Int64) {
        published.value(for: type) { Counter(label: "lht_events_published_total", dimensions: [("type", type)]) }.increment(by: count)
        lastSeq.record(seq)
    }

    func eventLog(lastSeq seq: Int64) { lastSeq.record(seq) }

    /// `lht_instance_info{instance="…"} 1`: the instance's name as a series of its own, to join onto
    /// the others, rather than a label on every series (the registry is per process, the families shared).
    func instance(_ name: String) {
        Gauge(label: "lht_instance_info", dimensions: [("instance", name)]).record(1)
    }

    private lazy var ownedPartitions = Gauge(label: "lht_owned_partitions")
    private lazy var leaseAge = Gauge(label: "lht_lease_age_seconds")

    /// `lht_owned_partitions` and, where leases are held in a shared database, `lht_lease_age_seconds`.
    func ownership(partitions: Int, leaseAgeSeconds: Double?) {
        ownedPartitions.record(partitions)
        if let leaseAgeSeconds { leaseAge.record(leaseAgeSeconds) }
    }

    private lazy var logLockHold = CoreMetrics.Timer(label: "lht_log_lock_hold_seconds")

    /// The histogram with no holds yet.
    func exportLogLockHolds() { _ = logLockHold }

    /// A write transaction released the log row's lock other instances wait on (`Store.logLockReleased`).
    func logLockReleased(heldNanoseconds: UInt64) {
        logLockHold.recordNanoseconds(Int64(clamping: heldNanoseconds))
    }

    func upstreamLag(_ upstream: String, _ lag: Int64) {
        lags.value(for: upstream) { Gauge(label: "lht_upstream_lag_events", dimensions: [("upstream", upstream)]) }.record(lag)
    }

    /// A service's own counter (`host.count`): `lht_<service counter in snake case>_total`.
    func count(_ name: String, by amount: Int64) {
        counted.value(for: name) { Counter(label: "lht_" + Self.snakeCase(name) + "_total") }.increment(by: amount)
    }

    private var labelled: [String: Counter] = [:]

    /// One series of a labelled family: `lht_<family>_total{label="value"}` (`host.countMetric`).
    /// `value` must come from a small fixed set (a kind, an outcome, an error code), never from a request.
    func count(family: String, label: String, value: String, by amount: Int64 = 1) {
        let key = family + "\u{0}" + label + "\u{0}" + value
        labelled.value(for: key) { Counter(label: "lht_" + family + "_total", dimensions: [(label, value)]) }.increment(by: amount)
    }

    /// `lht_auth_refused_total{reason}`: `request` and `subscription` from the access rules, the ZAP
    /// handler's reasons (`not_curve`, `unknown_key`, `no_identity`, `malformed`) at the handshake.
    func authRefused(_ reason: String, by amount: Int64 = 1) {
        count(family: "auth_refused", label: "reason", value: reason, by: amount)
    }

    /// The ZAP handler keeps its own totals; what they grew by since the last call is counted here.
    private var zapSeen: [String: Int] = [:]

    func syncHandshakeRefusals(_ totals: [String: Int]) {
        for (reason, total) in totals {
            let seen = zapSeen[reason]
            if seen == total { continue }
            zapSeen[reason] = total
            authRefused(reason, by: Int64(total - (seen ?? 0)))
        }
    }

    static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase { result += "_" + character.lowercased() } else { result.append(character) }
        }
        return result
    }
}

private extension Dictionary {
    /// The value for `key`, made by `make` and stored first when there is none: one lookup when it is there.
    mutating func value(for key: Key, orMake make: () -> Value) -> Value {
        if let value = self[key] { return value }
        let value = make()
        self[key] = value
        return value
    }
}
