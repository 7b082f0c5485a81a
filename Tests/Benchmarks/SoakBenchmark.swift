import Foundation
import LHTClient
import LHTSchema
import TestSupport
import ZeroMQ

/// `bench soak [--minutes 10] [--rate 1000] [--sample-seconds 10] [--window-seconds 30] [--client-ids v7|v4] [--redis]`
///
/// The built session-logger, reminder-planner, noalc-streak and notifier (following the planner and
/// the logger) under a steady open-loop load of `rate` requests a second for `minutes`: 70 %
/// `session.log`, 20 % `noalc.log`, and reads and puts (`session.list`, `daily.summary`,
/// `notification.list`, `reminder.put`, `streak.get`), so all four services answer. Every
/// `sample-seconds` it records each service's resident memory and write-ahead log and `-shm` sizes.
/// It reports, per `window-seconds` window and per service, the requests and their p50, p99 and max
/// latency, and per service the worst window p99 and the worst max (the targets: p99 ≤ 10 ms and max ≤
/// 100 ms in every window); the largest WAL; resident memory growth after minute 5; p99 drift (all
/// services, the last window against the second: the first holds start-up); and each service's bytes
/// written to storage (`/proc/<pid>/io`) per record it stored (its `health` lastSeq delta; the
/// streak service's: the NoAlc entries logged), the logger's beside the bytes each record takes in
/// its database files. Targets: WAL ≤ 256 MB, growth < 10 %, drift < 1.5×, the logger ≤ 3 KB written
/// per record. The logged records' ids are made as this system's clients make them (`RecordID()`,
/// version 7: in time order), or with `--client-ids v4` at random, as many UUID libraries do.
/// With `--redis`, a redis-server acks records like the logger's at the rate it logs them, in the same
/// windows (`RedisProbe`): what an ack that waits for the disk gets elsewhere.
enum SoakBenchmark {
    /// How the clients make the ids of the records they log.
    enum ClientIDs: String {
        case v7, v4

        func next() -> RecordID { self == .v7 ? RecordID() : RecordID(UUID()) }
    }

    struct Service {
        let name: String
        let child: StreakBenchmark.Child
        let directory: URL
        var pid: Int32 { child.process.pid }
        var api: String { child.endpoints["api"]! }
        /// Its storage files: the log's (an event file for the logger, SQLite for the rest) and, where it
        /// keeps one, its projection's.
        var databases: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".sqlite") || $0.hasSuffix(".events") }
                .sorted()
                .map { directory.appendingPathComponent($0).path }
        }
    }

    /// Indices into the services, in start order: each follows those before it.
    static let logger = 0, planner = 1, streak = 2, notifier = 3

    struct Sample {
        let second: Double
        let resident: [Double]  // MB, by service
        let wal: [Double]       // MB, all its files' together
        let shm: [Double]       // MB, all its files' together
    }

    /// The latencies (ms) of the replies to requests sent in one window, by service.
    typealias Window = [[Double]]

    static func run(_ arguments: [String]) throws {
        let minutes = Double(Options.int(arguments, "--minutes", 10))
        let rate = Double(Options.int(arguments, "--rate", 1000))
        let sampleSeconds = Double(Options.int(arguments, "--sample-seconds", 10))
        let windowSeconds = Double(Options.int(arguments, "--window-seconds", 30))
        let clientIDs = try arguments.firstIndex(of: "--client-ids").map { index in
            guard index + 1 < arguments.count, let ids = ClientIDs(rawValue: arguments[index + 1]) else { throw BenchError("--client-ids takes v7 or v4") }
            return ids
        } ?? .v7
        let redisServer = arguments.contains("--redis") ? try RedisServer.start(for: "redis probe") : nil
        defer { redisServer?.stop() }
        let root = temporaryDirectory("lht-soak")  // removed at exit: a 10-minute soak leaves 0.5 GB
        let wildcard = "tcp://127.0.0.1:*"
        func start(_ name: String, _ extra: [String]) throws -> Service {
            let directory = root.appendingPathComponent(name)
            // Metrics on, as deployed, but on a port the OS picks rather than the service's fixed default.
            return Service(name: name, child: try StreakBenchmark.Child(name, ["--data-dir", directory.path, "--api", wildcard, "--events", wildcard,
                                                                              "--metrics", "127.0.0.1:0"] + extra),
                           directory: directory)
        }
        var services = [try start("session-logger", ["--intake", wildcard])]
        defer { services.forEach { $0.child.stop() } }
        let loggerAPI = ["--session-logger-api", services[logger].api]
        let upstream = loggerAPI + ["--session-logger-events", services[logger].child.endpoints["events"]!]
        services.append(try start("reminder-planner", upstream))
        services.append(try start("noalc-streak", upstream))
        services.append(try start("notifier", loggerAPI + ["--planner-api", services[planner].api,
                                                           "--planner-events", services[planner].child.endpoints["events"]!]))

        let context = try Context()
        let sockets = try services.map { service -> Socket in
            let socket = try Socket(context, .dealer)
            try socket.connect(service.api)
            return socket
        }
        Thread.sleep(forTimeInterval: 0.3)  // connections settle before the clock starts
        print("soak: \(Int(rate)) requests/s for \(Int(minutes)) min against \(services.map(\.name).joined(separator: ", ")), "
              + "ids \(clientIDs.rawValue); "
              + "a sample every \(Int(sampleSeconds)) s, latency per \(Int(windowSeconds)) s window")
        print("   s  " + services.map { "\($0.name) RSS/WAL/shm MB".padding(toLength: 34, withPad: " ", startingAt: 0) }.joined())

        let stored0 = try services.map { try lastSeq(context, $0) }
        let written0 = services.map { ProcessStatus.bytesWritten(of: "\($0.pid)") }
        let redisWritten0 = redisServer.map { ProcessStatus.bytesWritten(of: "\($0.pid)") }
        var samples: [Sample] = []
        // Replies of one DEALER come in request order: a FIFO of send times per socket times them.
        var inFlight: [[(sent: UInt64, window: Int)]] = Array(repeating: [], count: sockets.count)
        var windows = [Window](repeating: Window(repeating: [], count: services.count), count: Int((minutes * 60 / windowSeconds).rounded(.up)))
        var failures = [Int](repeating: 0, count: services.count)
        var logged = 0, noalcLogged = 0
        let begin = DispatchTime.now().uptimeNanoseconds
        let probe = SyncProbe(directory: root, windows: windows.count, windowSeconds: windowSeconds, begin: begin)
        // The soak logs 90 of every 100 requests it sends.
        let redisProbe = try redisServer.map { server in
            try RedisProbe(server: server, rate: rate * 0.9, frame: { SessionLogBenchmark.sessionLog(n: $0, id: clientIDs.next(), user: "soak\($0 % 200)") },
                       windows: windows.count, windowSeconds: windowSeconds, begin: begin)
        }
        let interval = UInt64(1_000_000_000 / rate)
        let total = Int(rate * minutes * 60)
        var nextSample = 0.0
        func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

        func drain(until deadline: UInt64) throws {
            repeat {
                let readable = try Poller.readable(sockets, timeoutMilliseconds: LoadClients.pollMilliseconds(until: deadline, from: now()))
                for (index, socket) in sockets.enumerated() where readable[index] {
                    while let frames = try socket.receiveMultipart(dontWait: true), let reply = frames.last, !inFlight[index].isEmpty {
                        let request = inFlight[index].removeFirst()
                        windows[request.window][index].append(Double(now() - request.sent) / 1_000_000)
                        if !reply.starts(with: Data(#"{"v":1,"ok":true"#.utf8)) { failures[index] += 1 }
                    }
                }
            } while now() < deadline
        }

        for n in 0..<total {
            try drain(until: begin + UInt64(n) * interval)
            let (service, frame) = request(n, id: clientIDs.next())
            let window = min(windows.count - 1, Int(Double(now() - begin) / 1e9 / windowSeconds))
            inFlight[service].append((now(), window))
            try sockets[service].send(multipart: [Data(), frame], dontWait: true)
            if service == logger, n % 100 < 90 { logged += 1 }
            if service == logger, n % 100 >= 70, n % 100 < 90 { noalcLogged += 1 }
            let elapsed = Double(now() - begin) / 1e9
            if elapsed >= nextSample {
                let sample = Sample(second: elapsed, resident: services.map { ProcessStatus.megabytes("VmRSS", of: "\($0.pid)") },
                                    wal: services.map { megabytes(ofFiles: $0.databases, suffix: "-wal") },
                                    shm: services.map { megabytes(ofFiles: $0.databases, suffix: "-shm") })
                samples.append(sample)
                print(String(format: "%5.0f  ", elapsed) + services.indices.map {
                    String(format: "%7.1f %7.1f %5.2f", sample.resident[$0], sample.wal[$0], sample.shm[$0]).padding(toLength: 34, withPad: " ", startingAt: 0)
                }.joined())
                nextSample += sampleSeconds
            }
        }
        let syncs = probe.stop()  // at the load's end: its windows are the requests'
        let redis = redisProbe?.stop()
        try drain(until: now() + 3_000_000_000)
        print("requests answered \(windows.joined().map(\.count).reduce(0, +)), failed \(failures.reduce(0, +)), "
              + "unanswered \(inFlight.map(\.count).reduce(0, +))")
        var met = reportLatency(services: services, windows: windows, syncs: syncs, redis: redis, windowSeconds: windowSeconds, failures: failures)
        met = reportResources(services: services, samples: samples) && met
        let written = zip(services, written0).map { ProcessStatus.bytesWritten(of: "\($0.pid)") - $1 }
        let events = try zip(services, stored0).map { try lastSeq(context, $0) - $1 }
        // What each stored is its events, but for the streak service: it stores a day row for every NoAlc
        // entry and publishes streak.updated only when a streak changes.
        var stored = events.map { (count: $0, what: "its lastSeq delta") }
        stored[streak] = (Int64(noalcLogged), "NoAlc entries logged; its lastSeq delta \(events[streak])")
        met = reportStorage(services: services, written: written, stored: stored, logged: logged, seconds: minutes * 60) && met
        if let redisServer, let redisWritten0, let acked = redis.map({ $0.joined().count }), acked > 0 {
            print(String(format: "redis-server: %.0f bytes written to storage per XADD it acked (%d), at the logger's rate",
                         (ProcessStatus.bytesWritten(of: "\(redisServer.pid)") - redisWritten0) / Double(acked), acked))
        }
        print("soak targets: " + (met ? "met" : "NOT met"))
    }

    /// Request `n` of the mix, and which service (an index: `logger`, `planner`, …) it goes to; a
    /// record it logs has `id`.
    static func request(_ n: Int, id: RecordID) -> (Int, Data) {
        let user = UserID("soak\(n % 200)")!
        let today = Instant.now().local(in: ZoneID.utc).day
        switch n % 100 {
        case 0..<70:
            return (logger, SessionLogBenchmark.sessionLog(n: n, id: id, user: user.rawValue))
        case 70..<90:
            return (logger, LoadClients.frame(Ops.noalcLog, NoAlcLogRequest(id: id, userId: user,
                                                                      day: today.adding(days: -(n / 200 % 365)), level: NoAlcLevel.allCases[n % 3])))
        case 90..<92:
            let now = Instant.now()
            return (logger, LoadClients.frame(Ops.sessionList, SessionListRequest(userId: user, from: now.adding(seconds: -86_400), until: now)))
        case 92:
            return (logger, LoadClients.frame(Ops.dailySummary, DailySummaryRequest(userId: user, from: today.adding(days: -6), until: today,
                                                                                  timeZone: ZoneID("Europe/Berlin")!)))
        case 93..<95:
            // The user's notifications: those of the reminders below that fell due during the run.
            return (notifier, LoadClients.frame(Ops.notificationList, NotificationListRequest(userId: user)))
        case 95..<97:
            // A few reminders per user, edited again and again (same ids).
            return (planner, LoadClients.frame(Ops.reminderPut, ReminderPutRequest(
                id: RecordID(LoadClients.uuid(n % 800, client: 0xC0))!, userId: user, activity: .mindfulness,
                time: LocalTime(hour: n / 100 % 24, minute: n % 60))))
        default:
            return (streak, LoadClients.frame(Ops.streakGet, StreakGetRequest(userId: user)))
        }
    }
}
