import Foundation
import TestSupport

/// `lht_log_lock_hold_seconds` as scraped from instances' `/metrics`: cumulative counts by bucket
/// bound (seconds), which scrapes taken before and after a burst subtract into the burst's holds.
struct LockHoldHistogram {
    static let family = "lht_log_lock_hold_seconds"
    /// Cumulative count of holds at or under each bound, `+Inf` last.
    var buckets: [Double: Double] = [:]
    var count: Double = 0
    var sum: Double = 0

    /// The holds of every instance at `metricsEndpoints` (`host:port`), added up.
    static func scrape(_ metricsEndpoints: [String]) throws -> LockHoldHistogram {
        try metricsEndpoints.map { endpoint in
            let parts = endpoint.split(separator: ":")
            let body = try httpGet(host: String(parts[0]), port: Int(parts[1]) ?? 0, target: "/metrics")
            return LockHoldHistogram(scrape: String(decoding: body, as: UTF8.self))
        }.reduce(LockHoldHistogram(), +)
    }

    init() {}

    init(scrape text: String) {
        for line in text.split(separator: "\n") where line.hasPrefix(Self.family) {
            let fields = line.split(separator: " ")
            guard fields.count >= 2, let value = Double(fields[1]) else { continue }
            let name = fields[0]
            if name == Self.family + "_count" {
                count = value
            } else if name == Self.family + "_sum" {
                sum = value
            } else if name.hasPrefix(Self.family + "_bucket{le=\""), let bound = Self.bound(name) {
                buckets[bound] = value
            }
        }
    }

    private static func bound(_ name: Substring) -> Double? {
        let text = name.drop(while: { $0 != "\"" }).dropFirst().prefix(while: { $0 != "\"" })
        return text == "+Inf" ? .infinity : Double(text)
    }

    static func + (left: LockHoldHistogram, right: LockHoldHistogram) -> LockHoldHistogram {
        LockHoldHistogram(buckets: left.buckets.merging(right.buckets, uniquingKeysWith: +), count: left.count + right.count, sum: left.sum + right.sum)
    }

    static func - (after: LockHoldHistogram, before: LockHoldHistogram) -> LockHoldHistogram {
        LockHoldHistogram(buckets: after.buckets.merging(before.buckets.mapValues { -$0 }, uniquingKeysWith: +),
                          count: after.count - before.count, sum: after.sum - before.sum)
    }

    private init(buckets: [Double: Double], count: Double, sum: Double) {
        self.buckets = buckets
        self.count = count
        self.sum = sum
    }

    private var bounds: [Double] { buckets.keys.sorted() }

    /// The smallest bound that `fraction` of the holds are at or under: a histogram knows no finer.
    func quantileBound(_ fraction: Double) -> Double {
        bounds.first { buckets[$0]! >= fraction * count } ?? .infinity
    }

    /// The bucket the longest hold fell in, as (lower, upper] bounds in seconds.
    var longest: (lower: Double, upper: Double) {
        let bounds = bounds
        guard let index = bounds.firstIndex(where: { buckets[$0]! >= count }) else { return (0, .infinity) }
        return (index == 0 ? 0 : bounds[index - 1], bounds[index])
    }

    /// How many holds were longer than `seconds` (a bucket bound).
    func over(_ seconds: Double) -> Double { count - (buckets[seconds] ?? 0) }
}
