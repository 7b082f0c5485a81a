import Foundation
import LHTClient
import LHTSchema
import ZeroMQ

/// `bench soak [--minutes 10] [--rate 1000] [--sample-seconds 10]`
///
/// The built session-logger, reminder-planner and noalc-streak under a steady open-loop load of
/// `rate` requests a second for `minutes`: 70 % `session.log`, 20 % `noalc.log`, and reads and puts
/// (`session.list`, `daily.summary`, `reminder.put`, `streak.get`). Every `sample-seconds` it
/// records each service's resident memory, write-ahead log and `-shm` sizes and bytes written to
/// storage (`/proc/<pid>/io`). It reports the largest WAL, resident memory growth after minute 5,
/// p99 latency per minute (drift: the last minute against the second; the first holds start-up),
/// and the logger's bytes written per logged record beside the bytes each record takes in its
/// database file. Targets: WAL ≤ 256 MB, growth < 10 %, drift < 1.5×.
enum SoakBenchmark {
    struct Service {
        let name: String
        let child: StreakBenchmark.Child
        let directory: URL
        var pid: Int32 { child.process.pid }
        var database: String { directory.appendingPathComponent("\(name).sqlite").path }
    }

    struct Sample {
        let second: Double
        let resident: [Double]  // MB, by service
        let wal: [Double]       // MB
        let shm: [Double]       // MB
        let written: [Double]   // bytes written to storage since start
    }

    static func run(_ arguments: [String]) throws {
        let minutes = Double(Options.int(arguments, "--minutes", 10))
        let rate = Double(Options.int(arguments, "--rate", 1000))
        let sampleSeconds = Double(Options.int(arguments, "--sample-seconds", 10))
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lht-soak-\(UUID().uuidString.prefix(8))")
        let wildcard = "tcp://127.0.0.1:*"
        func start(_ name: String, _ extra: [String]) throws -> Service {
            let directory = root.appendingPathComponent(name)
            return Service(name: name, child: try StreakBenchmark.Child(name, ["--data-dir", directory.path, "--api", wildcard, "--events", wildcard] + extra),
                           directory: directory)
        }
        let logger = try start("session-logger", ["--intake", wildcard])
        let upstream = ["--session-logger-api", logger.child.endpoints["api"]!, "--session-logger-events", logger.child.endpoints["events"]!]
        let services = [logger, try start("reminder-planner", upstream), try start("noalc-streak", upstream)]
        defer { services.forEach { $0.child.stop() } }

        let context = try Context()
        let sockets = try services.map { service -> Socket in
            let socket = try Socket(context, .dealer)
            try socket.connect(service.child.endpoints["api"]!)
            return socket
        }
        Thread.sleep(forTimeInterval: 0.3)
        print("soak: \(Int(rate)) requests/s for \(Int(minutes)) min against \(services.map(\.name).joined(separator: ", ")); a sample every \(Int(sampleSeconds)) s")
        print("   s  " + services.map { "\($0.name) RSS/WAL/shm MB".padding(toLength: 34, withPad: " ", startingAt: 0) }.joined())

        let written0 = services.map { bytesWritten(pid: $0.pid) }
        var samples: [Sample] = []
        // Replies of one DEALER come in request order: a FIFO of send times per socket times them.
        var inFlight: [[(sent: UInt64, minute: Int)]] = Array(repeating: [], count: sockets.count)
        var latencies: [[Double]] = Array(repeating: [], count: Int(minutes.rounded(.up)))
        var failures = 0, logged = 0, unanswered = 0
        let begin = DispatchTime.now().uptimeNanoseconds
        let interval = UInt64(1_000_000_000 / rate)
        let total = Int(rate * minutes * 60)
        var nextSample = 0.0
        func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

        func drain(until deadline: UInt64) throws {
            repeat {
                let current = now()
                let remaining = deadline > current ? Int((deadline - current) / 1_000_000) : 0
                let readable = try Poller.readable(sockets, timeoutMilliseconds: remaining)
                for (index, socket) in sockets.enumerated() where readable[index] {
                    while let frames = try socket.receiveMultipart(dontWait: true), let reply = frames.last, !inFlight[index].isEmpty {
                        let request = inFlight[index].removeFirst()
                        latencies[request.minute].append(Double(now() - request.sent) / 1_000_000)
                        if !reply.starts(with: Data(#"{"v":1,"ok":true"#.utf8)) { failures += 1 }
                    }
                }
            } while now() < deadline
        }

        for n in 0..<total {
            try drain(until: begin + UInt64(n) * interval)
            let (service, frame) = request(n)
            let minute = min(latencies.count - 1, Int(Double(now() - begin) / 60e9))
            inFlight[service].append((now(), minute))
            try sockets[service].send(multipart: [Data(), frame], dontWait: true)
            if service == 0, n % 100 < 90 { logged += 1 }
            let elapsed = Double(now() - begin) / 1e9
            if elapsed >= nextSample {
                let sample = Sample(second: elapsed, resident: services.map { ProcessStatus.megabytes("VmRSS", of: "\($0.pid)") },
                                    wal: services.map { megabytes(ofFile: $0.database + "-wal") }, shm: services.map { megabytes(ofFile: $0.database + "-shm") },
                                    written: zip(services, written0).map { bytesWritten(pid: $0.pid) - $1 })
                samples.append(sample)
                print(String(format: "%5.0f  ", elapsed) + services.indices.map {
                    String(format: "%7.1f %7.1f %5.2f", sample.resident[$0], sample.wal[$0], sample.shm[$0]).padding(toLength: 34, withPad: " ", startingAt: 0)
                }.joined())
                nextSample += sampleSeconds
            }
        }
        try drain(until: now() + 3_000_000_000)
        unanswered = inFlight.map(\.count).reduce(0, +)
        report(services: services, samples: samples, latencies: latencies, logged: logged, failures: failures, unanswered: unanswered)
    }

    /// Request `n` of the mix, and which service (0 logger, 1 planner, 2 streak) it goes to.
    static func request(_ n: Int) -> (Int, Data) {
        let user = UserID("soak\(n % 200)")!
        let today = Instant.now().local(in: ZoneID.utc).day
        switch n % 100 {
        case 0..<70:
            return (0, SessionLogBenchmark.sessionLog(n: n, client: 0xA0, user: user.rawValue))
        case 70..<90:
            return (0, LoadClients.frame(Ops.noalcLog, NoAlcLogRequest(id: RecordID(LoadClients.uuid(n, client: 0xB0))!, userId: user,
                                                                      day: today.adding(days: -(n / 200 % 365)), level: NoAlcLevel.allCases[n % 3])))
        case 90..<93:
            let now = Instant.now()
            return (0, LoadClients.frame(Ops.sessionList, SessionListRequest(userId: user, from: now.adding(seconds: -86_400), until: now)))
        case 93..<95:
            return (0, LoadClients.frame(Ops.dailySummary, DailySummaryRequest(userId: user, from: today.adding(days: -6), until: today,
                                                                             timeZone: ZoneID("Europe/Berlin")!)))
        case 95..<97:
            // A few reminders per user, edited again and again (same ids).
            return (1, LoadClients.frame(Ops.reminderPut, ReminderPutRequest(
                id: RecordID(LoadClients.uuid(n % 800, client: 0xC0))!, userId: user, activity: .mindfulness,
                time: LocalTime(hour: n / 100 % 24, minute: n % 60))))
        default:
            return (2, LoadClients.frame(Ops.streakGet, StreakGetRequest(userId: user)))
        }
    }

    static func report(services: [Service], samples: [Sample], latencies: [[Double]], logged: Int, failures: Int, unanswered: Int) {
        let answered = latencies.map(\.count).reduce(0, +)
        print("requests answered \(answered), failed \(failures), unanswered \(unanswered)")
        print("minute  requests   p50 ms   p99 ms")
        for (minute, values) in latencies.enumerated() where !values.isEmpty {
            print(String(format: "%6d  %8d  %7.3f  %7.3f", minute + 1, values.count, LoadClients.percentile(values, 0.5), LoadClients.percentile(values, 0.99)))
        }
        let p99s = latencies.filter { !$0.isEmpty }.map { LoadClients.percentile($0, 0.99) }
        let drift = p99s.count >= 3 ? p99s.last! / p99s[1] : .nan
        // Growth after minute 5 (or the run's middle, when shorter): the last sample against the first one from then on.
        let settled = samples.first { $0.second >= min(300, (samples.last?.second ?? 0) / 2) } ?? samples.first
        var met = drift < 1.5
        for (index, service) in services.enumerated() {
            let largestWAL = samples.map { $0.wal[index] }.max() ?? .nan
            let growth = (samples.last.map { $0.resident[index] } ?? .nan) / (settled.map { $0.resident[index] } ?? .nan) - 1
            met = met && largestWAL <= 256 && growth < 0.10
            print(String(format: "%@: largest WAL %.1f MB (target ≤ 256), largest -shm %.2f MB, resident %.1f → %.1f MB from %.0f s: %+.1f %% (target < 10 %%)",
                         service.name, largestWAL, samples.map { $0.shm[index] }.max() ?? .nan, settled?.resident[index] ?? .nan,
                         samples.last?.resident[index] ?? .nan, settled?.second ?? .nan, growth * 100))
        }
        print(String(format: "p99 drift, last minute / second minute: %.2f× (target < 1.5×)", drift))
        if let written = samples.last?.written[0], logged > 0 {
            let fileBytes = (try? FileManager.default.attributesOfItem(atPath: services[0].database)[.size] as? Int64) ?? 0
            print(String(format: "session-logger: %.0f bytes written to storage per logged record (%d logged); its database file holds %.0f bytes per record",
                         written / Double(logged), logged, Double(fileBytes ?? 0) / Double(logged)))
        }
        print("soak targets: " + (met ? "met" : "NOT met"))
    }

    /// Bytes the process caused to be sent to storage (`write_bytes` in `/proc/<pid>/io`).
    static func bytesWritten(pid: Int32) -> Double {
        guard let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8),
              let line = io.split(separator: "\n").first(where: { $0.hasPrefix("write_bytes:") }),
              let value = Double(line.split(separator: " ").last ?? "") else { return .nan }
        return value
    }

    static func megabytes(ofFile path: String) -> Double {
        Double((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? 0) / 1_048_576
    }
}
