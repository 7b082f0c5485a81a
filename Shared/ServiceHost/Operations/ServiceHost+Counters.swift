import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

// What operators see of a running host besides metrics: counters and the last error in `health`,
// refusals logged at most once a minute.
extension ServiceHost {
    /// Counts in `health.counters` and `lht_<counter in snake case>_total`. `by: 0` makes both exist
    /// at 0, so every family a service has is in every scrape (and `promtool` sees it from the start).
    public func count(_ counter: String, by amount: Int64 = 1) {
        counters[counter, default: 0] += amount
        metrics.count(counter, by: amount)
    }

    /// As `count`, from any thread (a read behind the log): the loop adds it at its next turn, and
    /// before `health` answers.
    public func countFromAnyThread(_ counter: String) {
        countedOffLoop.withLock { $0[counter, default: 0] += 1 }
    }

    /// Adds what `countFromAnyThread` counted. Loop thread.
    func addCountsFromOtherThreads() {
        let counted = countedOffLoop.withLock { counts in
            defer { counts = [:] }
            return counts
        }
        for (counter, amount) in counted { count(counter, by: amount) }
    }

    /// Counts in a labelled metric family only (not in `health`): `lht_<family>_total{label="value"}`,
    /// e.g. `countMetric("decisions", "kind", "due")`. `value` must come from a small fixed set.
    /// `by: 0` makes the series exist at 0. Loop thread only, like `count`.
    public func countMetric(_ family: String, _ label: String, _ value: String, by amount: Int64 = 1) {
        metrics.count(family: family, label: label, value: value, by: amount)
    }

    /// Logs an error and keeps it as the last one, for `health` and `lht status`.
    public func recordError(_ message: String, _ metadata: Logger.Metadata = [:]) {
        logger.error("\(message)", metadata: metadata)
        lastError = metadata.isEmpty ? message : "\(message) \(metadata.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))"
    }

    /// Counts a refused request, subscription or connection (`health.counters.unauthorized`, or
    /// `counter`; `lht_auth_refused_total{reason}`) and logs it at most once a minute per key and reason.
    func refused(_ caller: Caller, reason: String, _ detail: String, op: String? = nil, userId: String? = nil,
                 counter: String = "unauthorized") {
        counters[counter, default: 0] += 1
        metrics.authRefused(reason)
        let key = caller.fingerprint + " " + reason
        let now = Date()
        guard refusalsLogged[key].map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return }
        refusalsLogged[key] = now
        var metadata: Logger.Metadata = ["key": "\(caller.fingerprint)", "reason": "\(reason)", "detail": "\(detail)"]
        if let op { metadata["op"] = "\(op)" }
        if let userId = caller.user?.description ?? userId { metadata["userId"] = "\(userId)" }
        logger.warning("refused", metadata: metadata)
    }

    /// The ZAP handler's refusals into `lht_auth_refused_total`, at most once a second.
    func syncHandshakeRefusals() {
        guard let security, Date().timeIntervalSince(refusalsSynced) >= 1 else { return }
        refusalsSynced = Date()
        metrics.syncHandshakeRefusals(Dictionary(uniqueKeysWithValues: security.refusals.map { ($0.key.rawValue, $0.value) }))
    }

    /// An upstream feed applied events or heard its upstream's newest seq.
    func upstreamProgressed(_ feed: UpstreamFeed) {
        metrics.upstreamLag(feed.upstream.rawValue, max(0, feed.upstreamSeq - feed.appliedSeq))
    }
}
