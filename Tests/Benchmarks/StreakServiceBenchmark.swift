import Foundation
import GRDB
import LHTClient
import LHTSchema
import NoAlcStreak
import StreakRules
import ServiceHost
import SQLiteStorage
import Storage
import Synchronization
import TestSupport
import ZeroMQ
extension StreakBenchmark {
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
        Target.report("streak.get p99 \(micros(p99)) µs", ratio: String(format: "%.2f × echo in a process of its own", p99 / percentile(samples[1], 0.99)),
                      target: "p99 ≤ 200 µs", met: p99 <= streakGetTarget)
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
        Target.report(String(format: "catch-up %.0f entries/s", catchUpRate), ratio: String(format: "%.2f × bare pull", catchUpRate / pullRate),
                      target: "≥ 200000 entries/s", met: catchUpRate >= catchUpTarget)
    }

    /// What the catch-up stores, alone: for each entry its day row (the streak's own upsert) and its
    /// `streak.updated` event's outbox row of `envelopeBytes`, a page of 1,000 entries a transaction
    /// as the catch-up applies them, in WAL mode, through the statements the services use
    /// (`RawStatement`). `synchronous` FULL is the services' durability, each commit waiting for the
    /// disk; OFF never waits, which leaves SQLite's own work: what one thread needs to store them at all.
    static func storeFloor(entries: Int, days: [String], envelopeBytes: Int, synchronous: String) throws {
        let envelope = Data(repeating: UInt8(ascii: "x"), count: envelopeBytes)
        try ScratchDatabase.with(synchronous: synchronous, migrations: NoAlcStreakService.sqliteMigrations) { database in
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
}
