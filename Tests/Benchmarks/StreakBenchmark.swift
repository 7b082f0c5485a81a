import Foundation
import GRDB
import LHTClient
import LHTSchema
import NoAlcStreak
import StreakRules
import ServiceHost
import Storage
import Synchronization
import TestSupport
import ZeroMQ

/// `bench streak [--quick] [--years Y] [--runs K] [--users N] [--days D] [--requests R] [--compute-only] [--through-logger]`
///
/// (a) `Streak.compute` over Y (10) years of daily entries for one user, K (2000) timed runs, against
/// two baselines timed in the same run on the same array: one pass over it, and building the
/// day → level dictionary the service would otherwise need. Target: p99 under 1 ms.
///
/// (b) `streak.get` round trips against the real executables, `noalc-streak` following a
/// `session-logger`, with N (10,000) users × D (365) days: by default written straight into the
/// streak's table (which it loads at start), since feeding millions of entries through the
/// session logger and the catch-up takes many minutes; `--through-logger` does exactly that and
/// reports the ingest figures too: the catch-up rate against a bare DEALER pulling the same
/// `events.since` pages from the logger afterwards (the upstream's and the transport's share), and
/// the target of 200,000 entries/s. R (20,000) requests for random users, each as of the user's
/// last day, are timed one at a time from a DEALER. The baselines, timed in the same run and
/// interleaved with it, are raw ROUTERs echoing a reply frame of the same size: one on a thread
/// of this process (what the transport alone costs), and one in a process of its own (`bench
/// streak --serve-echo BYTES`), which also pays the hops between processes that any service
/// pays: the floor of a request to another process. Target: p99 at most 200 µs. Then the streak
/// process's peak resident memory (VmHWM).
///
/// `--quick` shrinks the defaults (200 runs; 60 users × 365 days; 2,000 requests) to about 10 s.
///
/// The executables are taken from the directory of this binary (`swift build -c release` puts
/// them all there).
enum StreakBenchmark {
    static let target = Duration.milliseconds(1)
    static let streakGetTarget = Duration.microseconds(200)
    static let catchUpTarget = 200_000.0

    static func run(_ arguments: [String]) throws {
        let options = try Options(arguments)
        if let replySize = options.serveEcho { try serveEcho(replySize: replySize) }
        if options.applyOnly { return applyBenchmark() }
        computeBenchmark(options)
        if !options.computeOnly { try serviceBenchmark(options) }
    }

    // MARK: (c) Cost against the calendar span (`bench streak --apply`)

    /// The red-team case: 300 entries applied one by one as the service applies them (the streak
    /// recomputed as of the latest day after each), consecutive vs spread over 2000-01-01…today, plus
    /// the most expensive single request (`streak.get` far after the last entry). Target: spread
    /// within 2× consecutive, and no single compute above 20 ms.
    static func applyBenchmark() {
        let user = UserID("u0")!
        let today = LocalDay("2026-11-23")!, first = LocalDay("2000-01-01")!
        func apply(_ days: [LocalDay]) -> (total: Duration, worst: Duration) {
            var entries: [(day: LocalDay, level: NoAlcLevel)] = []
            var worst = Duration.zero
            let started = ContinuousClock.now
            for (index, day) in days.enumerated() {
                entries.append((day, index % 6 == 5 ? .easy : .steady))
                let one = ContinuousClock.now
                _ = Streak.compute(user: user, sortedLevels: entries, today: day, policy: .seed)
                worst = max(worst, ContinuousClock.now - one)
            }
            return (ContinuousClock.now - started, worst)
        }
        let consecutive = (0..<300).map { today.adding(days: $0 - 299) }
        let step = today.days(since: first) / 299
        let spread = (0..<300).map { first.adding(days: $0 * step) }
        var best: [String: (total: Duration, worst: Duration)] = [:]
        for _ in 0..<5 {
            for (name, days) in [("consecutive", consecutive), ("spread 2000…today", spread)] {
                let result = apply(days)
                best[name] = best[name].map { ($0.total < result.total ? $0.total : result.total, max($0.worst, result.worst)) } ?? result
            }
        }
        let entries = spread.map { (day: $0, level: NoAlcLevel.steady) }
        let farStart = ContinuousClock.now
        _ = Streak.compute(user: user, sortedLevels: entries, today: LocalDay("9999-12-31")!, policy: .seed)
        let far = ContinuousClock.now - farStart
        for name in ["consecutive", "spread 2000…today"] {
            print(row("apply 300 entries, \(name)", "total ms \(String(format: "%.2f", best[name]!.total / .milliseconds(1)))",
                      "worst compute µs \(micros(best[name]!.worst))"))
        }
        print(row("compute as of 9999-12-31, 300 spread entries", "µs \(micros(far))"))
        let ratio = best["spread 2000…today"]!.total / best["consecutive"]!.total
        let worst = max(best["spread 2000…today"]!.worst, best["consecutive"]!.worst, far)
        print("target spread ≤ 2× consecutive (\(String(format: "%.2f", ratio))×) and every compute < 20 ms: "
              + (ratio <= 2 && worst < .milliseconds(20) ? "met" : "NOT met"))
    }

    // MARK: (a) The pure calculation

    static func computeBenchmark(_ options: Options) {
        let today = LocalDay("2026-11-23")!
        let benchUser = UserID("u0")!
        let dayCount = options.years * 365 + options.years / 4
        var entries: [(day: LocalDay, level: NoAlcLevel)] = []
        for index in 0..<dayCount {
            if let level = level(user: 0, dayIndex: index) { entries.append((today.adding(days: index - dayCount + 1), level)) }
        }
        print("streak compute: \(options.years) years = \(dayCount) days, \(entries.count) entries (the rest unlogged), \(options.runs) runs")

        let sorted = Streak.compute(user: benchUser, sortedLevels: entries, today: today, policy: .seed)
        let byDictionary = Streak.compute(user: benchUser, levels: dayMap(entries), today: today, policy: .seed)
        precondition(sorted == byDictionary, "the two input forms disagree")
        print("result (seed): streak \(sorted.streakDays), earned \(sorted.rewardsEarned), used \(sorted.rewardsUsed),",
              "lost \(sorted.rewardsLost), available \(sorted.rewardsAvailable)")

        let map = dayMap(entries)
        var sink = 0
        let cases: [(String, () -> Int)] = [
            ("baseline: one pass over the entries", { entries.reduce(0) { $0 &+ $1.day.ordinal &+ $1.level.drinks } }),
            ("baseline: build the day map", { dayMap(entries).count }),
            ("compute(sortedLevels:) seed", { Streak.compute(user: benchUser, sortedLevels: entries, today: today, policy: .seed).streakDays }),
            ("compute(sortedLevels:) classic", { Streak.compute(user: benchUser, sortedLevels: entries, today: today, policy: .classic).streakDays }),
            ("compute(levels:) seed, map given", { Streak.compute(user: benchUser, levels: map, today: today, policy: .seed).streakDays }),
        ]
        var samples = Array(repeating: [Duration](), count: cases.count)
        for _ in 0..<max(options.runs / 10, 10) { for (_, body) in cases { sink &+= body() } }  // warm-up
        // Interleaved, so a noisy moment hurts every case alike.
        for _ in 0..<options.runs {
            for (index, (_, body)) in cases.enumerated() {
                let start = ContinuousClock.now
                sink &+= body()
                samples[index].append(ContinuousClock.now - start)
            }
        }
        print(row("case", "median µs", "p99 µs", "× one pass"), "(checksum \(sink & 0xFF))")
        let baseline = percentile(samples[0], 0.5)
        for (index, (name, _)) in cases.enumerated() {
            let median = percentile(samples[index], 0.5)
            print(row(name, micros(median), micros(percentile(samples[index], 0.99)), String(format: "%.1f", median / baseline)))
        }
        let p99 = percentile(samples[2], 0.99)
        print("target compute(sortedLevels:) p99 < 1000 µs: " + (p99 < target ? "met" : "NOT met"))
    }

    static func dayMap(_ entries: [(day: LocalDay, level: NoAlcLevel)]) -> [LocalDay: NoAlcLevel] {
        var levels = [LocalDay: NoAlcLevel](minimumCapacity: entries.count)
        for entry in entries { levels[entry.day] = entry.level }
        return levels
    }

    /// A deterministic history: mostly steady, some easy and wild days, a few unlogged ones.
    static func level(user: Int, dayIndex: Int) -> NoAlcLevel? {
        var mixer = UInt64(truncatingIfNeeded: user &* 1_000_003 &+ dayIndex) &+ 0x9E37_79B9_7F4A_7C15
        mixer = (mixer ^ (mixer >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixer = (mixer ^ (mixer >> 27)) &* 0x94D0_49BB_1331_11EB
        switch (mixer ^ (mixer >> 31)) % 100 {
        case 0..<3: return nil
        case 3..<8: return .wild
        case 8..<20: return .easy
        default: return .steady
        }
    }

    // MARK: (b) streak.get against the running service

    static func serviceBenchmark(_ options: Options) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-streak-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try Context()
        let wildcard = "tcp://127.0.0.1:*"
        let logger = try Child("session-logger", ["--data-dir", directory.appendingPathComponent("logger").path,
                                                  "--api", wildcard, "--events", wildcard, "--intake", wildcard])
        defer { logger.stop() }

        // A year ending yesterday, so the session logger has nothing to object to.
        let lastDay = LocalDay(ordinal: Int(Instant.now().secondsSince1970 / 86_400) - 1)
        let dayTexts = (0..<options.days).map { lastDay.adding(days: $0 - options.days + 1).description }
        let streakArguments = ["--data-dir", directory.appendingPathComponent("streak").path, "--api", wildcard, "--events", wildcard,
                               "--session-logger-api", logger.endpoints["api"]!, "--session-logger-events", logger.endpoints["events"]!]
        print("\nstreak.get: \(options.users) users × \(options.days) days, seeded " + (options.throughLogger
            ? "through session-logger → noalc-streak's catch-up" : "straight into noalc-streak's table (--through-logger for the whole path)"))
        var seeded = 0
        if options.throughLogger {
            let seedTime = try ContinuousClock().measure {
                seeded = try feed(logger.endpoints["api"]!, context: context, users: options.users, days: dayTexts)
            }
            print("session-logger took \(seeded) noalc.log entries in \(format(seedTime)) s (\(Int(Double(seeded) / seconds(seedTime))) /s)")
        } else {
            // Started once so the service creates its own schema; then its table is filled as its feed would fill it.
            try Child("noalc-streak", streakArguments).stop()
            let seedTime = try ContinuousClock().measure {
                seeded = try fillTable(directory.appendingPathComponent("streak/noalc-streak.sqlite"), users: options.users, days: dayTexts)
            }
            print("wrote \(seeded) day levels in \(format(seedTime)) s")
        }
        var streak: Child!
        let startTime = try ContinuousClock().measure { streak = try Child("noalc-streak", streakArguments, readyTimeout: 7200) }
        defer { streak.stop() }
        print("noalc-streak " + (options.throughLogger ? "caught up" : "loaded its table") + " and was ready in \(format(startTime)) s")
        if options.throughLogger {
            try compareCatchUp(entries: seeded, took: startTime, logger: logger.endpoints["api"]!, context: context,
                               streakDatabase: directory.appendingPathComponent("streak/noalc-streak.sqlite"), days: dayTexts)
        }

        let client = try Socket(context, .dealer)
        try client.setReceiveTimeout(milliseconds: 10_000)
        try client.connect(streak.endpoints["api"]!)
        let asOf = dayTexts.last!
        func streakGet(_ user: Int) -> StreakGetRequest { StreakGetRequest(userId: UserID("u\(user)")!, asOf: LocalDay(asOf)!) }
        func request(_ user: Int) -> Data { LoadClients.frame(Ops.streakGet, streakGet(user)) }
        // The service's answers must be the calculation's.
        let checker = ServiceClient(context: context, endpoint: streak.endpoints["api"]!)
        for user in stride(from: 0, to: options.users, by: max(options.users / 20, 1)) {
            let state = try? checker.call(Ops.streakGet, streakGet(user), timeoutMilliseconds: 10_000)
            var levels: [(day: LocalDay, level: NoAlcLevel)] = []
            for (index, text) in dayTexts.enumerated() { if let level = level(user: user, dayIndex: index) { levels.append((LocalDay(text)!, level)) } }
            let expected = Streak.compute(user: UserID("u\(user)")!, sortedLevels: levels, today: LocalDay(asOf)!, policy: .seed)
            guard let state, state.streakDays == expected.streakDays, state.rewardsAvailable == expected.rewardsAvailable,
                  state.rewardsUsed == expected.rewardsUsed, state.lastLoggedDay == expected.lastLoggedDay else {
                throw BenchError("u\(user): service says \(String(describing: state)), the calculation \(expected)")
            }
        }
        let replySize = try call(client, request(0)).count

        let echo = try Echo(context: context, replySize: replySize)
        defer { echo.stop() }
        let echoProcess = try Child("bench", ["streak", "--serve-echo", "\(replySize)"])
        defer { echoProcess.stop() }
        let echoClient = try Socket(context, .dealer), echoProcessClient = try Socket(context, .dealer)
        for (socket, endpoint) in [(echoClient, echo.endpoint), (echoProcessClient, echoProcess.endpoints["api"]!)] {
            try socket.setReceiveTimeout(milliseconds: 10_000)
            try socket.connect(endpoint)
        }

        var random = UInt64(0x57_2EA4)
        func nextUser() -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(options.users))
        }
        let paths = [("baseline: ROUTER echo", echoClient), ("baseline: echo, own process", echoProcessClient), ("streak.get", client)]
        for _ in 0..<1000 {  // warm-up of every path
            for (_, socket) in paths { _ = try call(socket, socket === client ? request(nextUser()) : request(0)) }
        }
        var samples = paths.map { _ in [Duration]() }
        for index in samples.indices { samples[index].reserveCapacity(options.requests) }
        for _ in 0..<options.requests {
            let frame = request(nextUser())
            for (index, (_, socket)) in paths.enumerated() {
                let start = ContinuousClock.now
                _ = try call(socket, frame)
                samples[index].append(ContinuousClock.now - start)
            }
        }
        print("\(options.requests) round trips each, one at a time, interleaved; reply \(replySize) bytes")
        print(row("path", "median µs", "p99 µs", "p99.9 µs"))
        for ((name, _), samples) in zip(paths, samples) {
            print(row(name, micros(percentile(samples, 0.5)), micros(percentile(samples, 0.99)), micros(percentile(samples, 0.999))))
        }
        let p99 = percentile(samples[2], 0.99)
        print(String(format: "streak.get p99 − echo p99: %.0f µs; − the own process's echo p99: %.0f µs",
                     (p99 - percentile(samples[0], 0.99)) / .microseconds(1), (p99 - percentile(samples[1], 0.99)) / .microseconds(1)))
        print("target streak.get p99 ≤ 200 µs: " + (p99 <= streakGetTarget ? "met" : "NOT met"))
        print(String(format: "peak RSS of noalc-streak (VmHWM): %.0f MB", ProcessStatus.megabytes("VmHWM", of: "\(streak.process.pid)")))
    }

    /// The catch-up rate beside a bare DEALER pulling the same `events.since` pages from the logger,
    /// without decoding or applying them: what the upstream and the transport cost alone; and beside
    /// storing what the catch-up stores, without anything else (`storeFloor`).
    static func compareCatchUp(entries: Int, took catchUp: Duration, logger endpoint: String, context: Context,
                               streakDatabase: URL, days: [String]) throws {
        let lastSeq = try ServiceClient(context: context, endpoint: endpoint)
            .call(Ops.eventsSince, EventsSinceRequest(after: 0, limit: 1), timeoutMilliseconds: 10_000).lastSeq
        let socket = try Socket(context, .dealer)
        try socket.setReceiveTimeout(milliseconds: 10_000)
        try socket.connect(endpoint)
        var bytes = 0
        let pullTime = try ContinuousClock().measure {
            for after in stride(from: Int64(0), to: lastSeq, by: 1000) {
                bytes += try call(socket, LoadClients.frame(Ops.eventsSince, EventsSinceRequest(after: after, limit: 1000))).count
            }
        }
        let catchUpRate = Double(entries) / seconds(catchUp), pullRate = Double(lastSeq) / seconds(pullTime)
        print(row("catch-up (start to ready)", "\(Int(catchUpRate)) entries/s"))
        print(row("baseline: bare events.since pull", "\(Int(pullRate)) entries/s", "\(bytes / 1_048_576) MB"))
        print(String(format: "catch-up / bare pull = %.2f", catchUpRate / pullRate))
        let envelopeBytes = try DatabaseQueue(path: streakDatabase.path).read { db in
            try Int.fetchOne(db, sql: "SELECT CAST(AVG(LENGTH(envelope)) AS INTEGER) FROM outbox") ?? 0
        }
        print("baseline: bare SQLite stores, each entry a day row and a \(envelopeBytes) B outbox row, 1,000 a transaction")
        for synchronous in ["FULL", "OFF"] {
            let storeRate = Double(entries) / seconds(try ContinuousClock().measure {
                try storeFloor(entries: entries, days: days, envelopeBytes: envelopeBytes, synchronous: synchronous)
            })
            print(row("  synchronous=\(synchronous)" + (synchronous == "OFF" ? " (no disk wait)" : ""), "\(Int(storeRate)) entries/s",
                      String(format: "catch-up / this = %.2f", catchUpRate / storeRate)))
        }
        print("target catch-up ≥ 200000 entries/s: " + (catchUpRate >= catchUpTarget ? "met" : "NOT met"))
    }

    /// What the catch-up stores, alone: for each entry its day row (the streak's own upsert) and its
    /// `streak.updated` event's outbox row of `envelopeBytes`, a page of 1,000 entries a transaction
    /// as the catch-up applies them, in WAL mode, through the statements the services use
    /// (`RawStatement`). `synchronous` FULL is the services' durability, each commit waiting for the
    /// disk; OFF never waits, which leaves SQLite's own work: what one thread needs to store them at all.
    static func storeFloor(entries: Int, days: [String], envelopeBytes: Int, synchronous: String) throws {
        let envelope = Data(repeating: UInt8(ascii: "x"), count: envelopeBytes)
        try ScratchDatabase.with(synchronous: synchronous, migrations: NoAlcStreakService.migrate) { database in
            for page in stride(from: 0, to: entries, by: 1000) {
                try database.write { db in
                    for seq in page..<min(page + 1000, entries) {
                        let user = "u\(seq / days.count)"
                        try RawStatement.execute("""
                            INSERT INTO noalc_level (user_id, day, level, seq) VALUES (?, ?, 'steady', ?)
                            ON CONFLICT (user_id, day) DO UPDATE SET level = excluded.level, seq = excluded.seq WHERE excluded.seq > noalc_level.seq
                            """, db, [.text(user), .text(days[seq % days.count]), .integer(Int64(seq))])
                        try RawStatement.execute("INSERT INTO outbox VALUES (?, ?, ?)", db,
                                                 [.integer(Int64(seq)), .text("streak.updated.\(user).noalc"), .blob(envelope)])
                    }
                }
            }
        }
    }

    /// Logs every user's days through the session logger's api, keeping a window of requests in
    /// flight (below the reply queue's limit, so no reply is ever dropped). Returns how many were logged.
    static func feed(_ endpoint: String, context: Context, users: Int, days: [String]) throws -> Int {
        let socket = try Socket(context, .dealer)
        try socket.setSendHighWaterMark(0)
        try socket.setReceiveHighWaterMark(0)
        try socket.setReceiveTimeout(milliseconds: 60_000)
        try socket.connect(endpoint)
        let window = 900
        var inFlight = 0, sent = 0
        func receiveOne() throws {
            guard let frames = try socket.receiveMultipart(), let body = frames.last else { throw BenchError("session-logger stopped answering") }
            guard body.starts(with: Data(#"{"v":1,"ok":true"#.utf8)) else { throw BenchError("\(Ops.noalcLog.name) failed: \(String(decoding: body, as: UTF8.self))") }
            inFlight -= 1
        }
        for user in 0..<users {
            for (index, day) in days.enumerated() {
                guard let level = level(user: user, dayIndex: index) else { continue }
                if inFlight == window { try receiveOne() }
                let frame = LoadClients.frame(Ops.noalcLog, NoAlcLogRequest(userId: UserID("u\(user)")!, day: LocalDay(day)!, level: level))
                try socket.send(multipart: [Data(), frame])
                inFlight += 1
                sent += 1
            }
        }
        while inFlight > 0 { try receiveOne() }
        return sent
    }

    /// Writes the rows `noalc-streak` keeps per user and day, as applying the same entries would.
    static func fillTable(_ database: URL, users: Int, days: [String]) throws -> Int {
        var rows = 0
        try DatabaseQueue(path: database.path).write { db in
            let insert = try db.makeStatement(sql: "INSERT INTO noalc_level (user_id, day, level, seq) VALUES (?, ?, ?, ?)")
            for user in 0..<users {
                for (index, day) in days.enumerated() {
                    guard let level = level(user: user, dayIndex: index) else { continue }
                    rows += 1
                    try insert.execute(arguments: ["u\(user)", day, level.rawValue, rows])
                }
            }
        }
        return rows
    }

    static func call(_ socket: Socket, _ frame: Data) throws -> Data {
        try socket.send(multipart: [Data(), frame])
        guard let frames = try socket.receiveMultipart(), let body = frames.last else { throw BenchError("no reply within 10 s") }
        return body
    }

    /// `--serve-echo BYTES`: an `Echo` in this process, announced as a service announces itself
    /// (`ready echo api=…`), until the process is ended.
    static func serveEcho(replySize: Int) throws -> Never {
        let echo = try Echo(context: Context(), replySize: replySize)
        print("ready echo api=\(echo.endpoint)")
        fflush(nil)
        while true { pause() }
    }

    /// A ROUTER on its own thread answering every request with a fixed frame: the transport's cost alone.
    final class Echo: Sendable {
        let endpoint: String
        private let control: Control

        /// What the caller and the echo thread share; the socket itself stays on its thread.
        final class Control: Sendable {
            let bound = Mutex<Result<String, BenchError>?>(nil)
            let ready = DispatchSemaphore(value: 0)
            let stopped = Atomic<Bool>(false)
            let finished = DispatchSemaphore(value: 0)
        }

        init(context: Context, replySize: Int) throws {
            let control = Control()
            Thread {
                defer { control.finished.signal() }
                let reply = Data(repeating: UInt8(ascii: "x"), count: replySize)
                do {
                    let router = try Socket(context, .router)
                    try router.setReceiveTimeout(milliseconds: 50)
                    let endpoint = try router.bind("tcp://127.0.0.1:*")
                    control.bound.withLock { $0 = .success(endpoint) }
                    control.ready.signal()
                    while !control.stopped.load(ordering: .relaxed) {
                        guard let frames = try router.receiveMultipart() else { continue }
                        try router.send(multipart: frames.dropLast() + [reply])
                    }
                } catch {
                    control.bound.withLock { if $0 == nil { $0 = .failure(BenchError("echo: \(error)")) } }
                    control.ready.signal()
                }
            }.start()
            control.ready.wait()
            endpoint = try control.bound.withLock { $0! }.get()
            self.control = control
        }

        func stop() {
            control.stopped.store(true, ordering: .relaxed)
            control.finished.wait()
        }
    }

    /// A built executable started like the system tests start it: wildcard ports, endpoints read from `ready`.
    final class Child {
        let process: ChildProcess
        private(set) var endpoints: [String: String] = [:]
        private let name: String
        private let output: URL

        /// Where `swift build` put the executables: beside this one.
        static let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()

        /// Starts `name` and waits for its ready line.
        init(_ name: String, _ arguments: [String], readyTimeout: TimeInterval = 60) throws {
            let path = Self.directory.appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw BenchError("no \(name) beside bench in \(Self.directory.path): build them all (swift build -c release)")
            }
            var environment = ProcessInfo.processInfo.environment
            environment["LHT_LOG_LEVEL"] = environment["LHT_LOG_LEVEL"] ?? "error"
            self.name = name
            output = temporaryDirectory("bench-\(name)-out").appendingPathComponent("stdout")
            process = try ChildProcess(path, arguments, environment: environment, stdout: .file(output.path))
            try waitUntilReady(timeout: readyTimeout)
        }

        func waitUntilReady(timeout: TimeInterval) throws {
            // The ready line is all a service prints on standard output.
            var text = ""
            let deadline = Date().addingTimeInterval(timeout)
            while !text.contains("\n") {
                guard process.isRunning, Date() < deadline else { throw BenchError("\(name) printed no ready line") }
                Thread.sleep(forTimeInterval: 0.01)
                text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            }
            for part in text.split(separator: "\n")[0].split(separator: " ").dropFirst(2) {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { endpoints[String(pair[0])] = String(pair[1]) }
            }
        }

        /// SIGTERM and the exit.
        func stop() {
            process.terminate()
            process.wait()
        }
    }

    // MARK: Options and printing

    struct Options {
        var years = 10
        var runs = 2000
        var users = 10_000
        var days = 365
        var requests = 20_000
        var computeOnly = false
        var throughLogger = false
        var applyOnly = false
        var serveEcho: Int?

        init(_ arguments: [String]) throws {
            if arguments.contains("--quick") {
                runs = 200
                users = 60
                requests = 2000
            }
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                if flag == "--quick" { continue }
                if flag == "--apply" {
                    applyOnly = true
                    continue
                }
                if flag == "--compute-only" || flag == "--through-logger" {
                    if flag == "--compute-only" { computeOnly = true } else { throughLogger = true }
                    continue
                }
                guard let text = rest.popFirst(), let value = Int(text), value > 0 else { throw BenchError("\(flag) needs a positive number") }
                switch flag {
                case "--years": years = value
                case "--runs": runs = value
                case "--users": users = value
                case "--days": days = value
                case "--requests": requests = value
                case "--serve-echo": serveEcho = value
                default: throw BenchError("unknown flag \(flag)")
                }
            }
        }
    }

    static func percentile(_ samples: [Duration], _ fraction: Double) -> Duration {
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))]
    }

    static func micros(_ duration: Duration) -> String { String(format: "%.1f", duration / .microseconds(1)) }

    static func seconds(_ duration: Duration) -> Double { duration / .seconds(1) }

    static func format(_ duration: Duration) -> String { String(format: "%.1f", seconds(duration)) }

    static func row(_ columns: String...) -> String {
        zip(columns, [36, 12, 12, 12]).map { text, width in
            text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
        }.joined()
    }
}
