import Foundation
import LHTClient
import LHTSchema
import TestSupport
import ZeroMQ
/// What the soak prints at its end: latency per window, resources, storage; each says whether its targets are met.
extension SoakBenchmark {
    /// Per window and service: requests, p50, p99, max, and the same for the disk's own syncs
    /// (`SyncProbe`) and Redis's acks (`RedisProbe`, if any); per service the worst window, and in how
    /// many windows it missed the target (p99 ≤ 10 ms, max ≤ 100 ms) where the disk alone, or Redis,
    /// missed it too, and its p99 against Redis's window by window; all services' p99 drift. Whether
    /// the latency targets are met.
    static func reportLatency(services: [Service], windows: [Window], syncs: [[Double]], redis: [[Double]]?, windowSeconds: Double,
                              failures: [Int]) -> Bool {
        func label(_ window: Int) -> String { "\(Int(Double(window) * windowSeconds))-\(Int(Double(window + 1) * windowSeconds)) s" }
        func printRow(_ window: Int, _ name: String, _ values: [Double]) {
            guard !values.isEmpty else { return }
            print(label(window).padding(toLength: 13, withPad: " ", startingAt: 0) + name.padding(toLength: 18, withPad: " ", startingAt: 0)
                  + String(format: " %8d  %7.3f  %7.3f  %7.3f", values.count, LoadClients.percentile(values, 0.5),
                           LoadClients.percentile(values, 0.99), values.max()!))
        }
        /// The windows whose latencies miss the target.
        func missed(_ byWindow: [[Double]]) -> Set<Int> {
            Set(byWindow.indices.filter { !byWindow[$0].isEmpty && (LoadClients.percentile(byWindow[$0], 0.99) > 10 || byWindow[$0].max()! > 100) })
        }
        print("window       service            requests   p50 ms   p99 ms   max ms")
        for (window, latencies) in windows.enumerated() {
            for (service, values) in zip(services, latencies) { printRow(window, service.name, values) }
            printRow(window, "(disk fdatasync)", syncs[window])
            if let redis { printRow(window, "(redis XADD)", redis[window]) }
        }
        let diskMissed = missed(syncs)
        print("the disk's own fdatasync (\(Int(SyncProbe.rate))/s, \(SyncProbe.recordBytes) B appended each) missed p99 ≤ 10 ms and max ≤ 100 ms "
              + "in \(diskMissed.count) of \(syncs.filter { !$0.isEmpty }.count) windows")
        let redisMissed = redis.map(missed)
        if let redis, let redisMissed {
            print("redis-server (appendfsync always), records like the logger's at its rate, missed p99 ≤ 10 ms and max ≤ 100 ms "
                  + "in \(redisMissed.count) of \(redis.filter { !$0.isEmpty }.count) windows")
        }
        /// The service's p99 over Redis's in each window both answered in: lowest, median, highest.
        func againstRedis(_ index: Int) -> String {
            guard let redis else { return "" }
            let ratios = windows.indices.filter { !windows[$0][index].isEmpty && !redis[$0].isEmpty }
                .map { LoadClients.percentile(windows[$0][index], 0.99) / LoadClients.percentile(redis[$0], 0.99) }.sorted()
            guard !ratios.isEmpty else { return "" }
            return String(format: "; p99 ÷ Redis's in the same window %.2f–%.2f, median %.2f", ratios.first!, ratios.last!, ratios[ratios.count / 2])
        }
        var met = true
        for (index, service) in services.enumerated() {
            let answered = windows.indices.filter { !windows[$0][index].isEmpty }
            let p99 = answered.map { ($0, LoadClients.percentile(windows[$0][index], 0.99)) }.max { $0.1 < $1.1 }
            let max = answered.map { ($0, windows[$0][index].max()!) }.max { $0.1 < $1.1 }
            guard let p99, let max else {
                met = false
                print("\(service.name): no replies   target p99 ≤ 10 ms and max ≤ 100 ms in every window: NOT met")
                continue
            }
            let serviceMissed = missed(windows.map { $0[index] })
            let serviceMet = serviceMissed.isEmpty
            met = met && serviceMet
            let redisToo = redisMissed.map { ", Redis too in \(serviceMissed.intersection($0).count)" } ?? ""
            print(String(format: "%@: worst window p99 %.3f ms (%@), worst max %.3f ms (%@), %d failed; missed in %d windows, the disk alone too in %d of them%@%@   target p99 ≤ 10 ms and max ≤ 100 ms in every window: %@",
                         service.name, p99.1, label(p99.0), max.1, label(max.0), failures[index], serviceMissed.count,
                         serviceMissed.intersection(diskMissed).count, redisToo, againstRedis(index), serviceMet ? "met" : "NOT met"))
        }
        let p99s = windows.map { Array($0.joined()) }.filter { !$0.isEmpty }.map { LoadClients.percentile($0, 0.99) }
        let drift = p99s.count >= 3 ? p99s.last! / p99s[1] : .nan
        print(String(format: "p99 drift of all services, last window / second window: %.2f× (target < 1.5×)", drift))
        return met && drift < 1.5
    }

    /// Each service's largest WAL and -shm, and its resident memory growth after minute 5 (or the
    /// run's middle, when shorter): the last sample against the first one from then on.
    static func reportResources(services: [Service], samples: [Sample]) -> Bool {
        let settled = samples.first { $0.second >= min(300, (samples.last?.second ?? 0) / 2) } ?? samples.first
        var met = true
        for (index, service) in services.enumerated() {
            let largestWAL = samples.map { $0.wal[index] }.max() ?? .nan
            let growth = (samples.last.map { $0.resident[index] } ?? .nan) / (settled.map { $0.resident[index] } ?? .nan) - 1
            met = met && largestWAL <= 256 && growth < 0.10
            print(String(format: "%@: largest WAL %.1f MB (target ≤ 256), largest -shm %.2f MB, resident %.1f → %.1f MB from %.0f s: %+.1f %% (target < 10 %%)",
                         service.name, largestWAL, samples.map { $0.shm[index] }.max() ?? .nan, settled?.resident[index] ?? .nan,
                         samples.last?.resident[index] ?? .nan, settled?.second ?? .nan, growth * 100))
        }
        return met
    }

    /// Bytes each service wrote to storage per record it stored (`stored`: how many, and what they
    /// are), and the others' also per record the logger stored; the logger's also beside what a
    /// record takes in its database files, and against its target. Whether the logger's target is met.
    static func reportStorage(services: [Service], written: [Double], stored: [(count: Int64, what: String)], logged: Int, seconds: Double) -> Bool {
        var met = false
        for (index, service) in services.enumerated() {
            guard stored[index].count > 0 else {
                print(String(format: "%@: %.0f bytes written to storage, no records stored", service.name, written[index]))
                continue
            }
            let perRecord = written[index] / Double(stored[index].count)
            var line = String(format: "%@: %.0f bytes written to storage per stored record (%lld records: %@)",
                              service.name, perRecord, stored[index].count, stored[index].what)
            if index != logger, stored[logger].count > 0 {
                // Every service also against the records the logger logged, as the target counts them: the planner
                // writes for each (its copy of the session), and decides only now and then.
                line += String(format: "; %.0f per record the logger logged", written[index] / Double(stored[logger].count))
            }
            if index == logger {
                met = perRecord <= 3072
                line += String(format: "; %d logging requests sent; its database files hold %.0f bytes per record   target ≤ 3 KB written per record: %@",
                               logged, megabytes(ofFiles: service.databases) * 1_048_576 / Double(stored[index].count), met ? "met" : "NOT met")
                // The floor for a log synced once a record: as many records a second, each appended and fdatasync'ed.
                let recordBytes = Int(megabytes(ofFiles: [service.directory.appendingPathComponent("\(service.name).events").path]) * 1_048_576) / Int(stored[index].count)
                if let floor = try? SyncFloor.bytesPerRecord(recordBytes: recordBytes, rate: Double(logged) / seconds, seconds: 10) {
                    line += String(format: "\n  floor: %d B records appended and fdatasync'ed one at a time, %.0f a second: %.0f bytes written per record; logger / floor %.2f",
                                   recordBytes, Double(logged) / seconds, floor, perRecord / floor)
                }
            }
            print(line)
        }
        return met
    }

    /// The last sequence number of the service's event log, from its `health`.
    static func lastSeq(_ context: Context, _ service: Service) throws -> Int64 {
        try ServiceClient(context: context, endpoint: service.api).call(Ops.health, NoFields(), timeoutMilliseconds: 10_000).lastSeq
    }

    static func megabytes(ofFiles paths: [String], suffix: String = "") -> Double {
        paths.map { Double((try? FileManager.default.attributesOfItem(atPath: $0 + suffix)[.size] as? Int64) ?? 0) / 1_048_576 }.reduce(0, +)
    }
}
