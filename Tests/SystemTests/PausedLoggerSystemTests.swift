import Foundation
import Glibc
import PostgresStorage
import Synchronization
import Testing
import ZeroMQ

/// Two session loggers over one PostgreSQL under load, one of them paused (SIGSTOP) inside a write
/// transaction, holding the log row's lock that every instance's writes wait on. The server ends
/// that transaction and its session, the other logger writes on within seconds, and once resumed
/// the paused one serves again; every acknowledged session is in the log, once.
@Suite(.serialized, SystemTestBackend.onceOnly) struct PausedLoggerSystemTests {
    @Test func aLoggerPausedInsideATransactionIsEndedByTheServerAndTheOtherWritesOn() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let database = ["--metrics", "off", "--database", postgres.url]
        let loggers = [try ServiceProcess("session-logger", arguments: database + ["--instance", "paused"]),
                       try ServiceProcess("session-logger", arguments: database + ["--instance", "other"])]
        let context = try Context()

        // A writer per logger: the ids it had acknowledged, and when the last one was.
        let acknowledged = Mutex<[[String]]>([[], []]), lastAck = Mutex<[Date]>([Date(), Date()])
        let stop = Atomic<Bool>(false), writers = DispatchGroup()
        for (index, logger) in loggers.enumerated() {
            writers.enter()
            Thread {
                defer { writers.leave() }
                var client = try? WireClient(logger.api, context: context)
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    n += 1
                    let session = ClusterSystemTests.session("pat", minutesAgo: 60 + n % 900)
                    guard let writer = client, (try? writer.ok("session.log", session)) != nil else {
                        // Unanswered (its logger paused) or unavailable: a fresh socket, and on.
                        client = try? WireClient(logger.api, context: context)
                        Thread.sleep(forTimeInterval: 0.05)  // backs off before reconnecting
                        continue
                    }
                    acknowledged.withLock { $0[index].append(session["id"] as! String) }
                    lastAck.withLock { $0[index] = Date() }
                }
            }.start()
        }
        defer { stop.store(true, ordering: .relaxed); loggers[0].process.signal(SIGCONT) }
        try waitUntil(timeout: 10, interval: 0.05, "both loggers acknowledging") { acknowledged.withLock { $0.allSatisfy { $0.count >= 20 } } }

        // Paused until caught inside a transaction that holds the log row's lock: a backend idle
        // in a transaction that has locked a row (it has an xid), unchanged a while.
        let admin = try postgres.connect()
        func idleInTransaction() throws -> Set<String> {
            Set(try admin.execute("""
                SELECT pid || ' ' || state_change FROM pg_stat_activity
                WHERE state = 'idle in transaction' AND backend_xid IS NOT NULL AND datname = current_database()
                """).compactMap { $0.text(0) })
        }
        var frozen: Set<String> = []
        for _ in 0..<40 where frozen.isEmpty {
            loggers[0].process.signal(SIGSTOP)
            Thread.sleep(forTimeInterval: 0.2)  // the statements it sent before the stop have run
            let first = try idleInTransaction()
            Thread.sleep(forTimeInterval: 0.3)  // "unchanged a while": the same transactions, still idle
            frozen = first.intersection(try idleInTransaction())
            if frozen.isEmpty {
                loggers[0].process.signal(SIGCONT)
                Thread.sleep(forTimeInterval: 0.1)  // runs a while before the next try to catch it
            }
        }
        try #require(!frozen.isEmpty, "the logger was never paused inside a transaction")
        let paused = Date()

        // The other logger writes on once the server ended the frozen transaction.
        try waitUntil(timeout: 15, interval: 0.1, "the other logger acknowledging again") { lastAck.withLock { $0[1] } > paused.addingTimeInterval(0.5) }
        let resumedAfter = lastAck.withLock { $0[1] }.timeIntervalSince(paused)
        #expect(resumedAfter < 8, "the other logger waited \(resumedAfter) s on the paused one's transaction")
        #expect(try idleInTransaction().isDisjoint(with: frozen), "the frozen transaction is still there")

        // Resumed, the paused logger serves again.
        loggers[0].process.signal(SIGCONT)
        let before = acknowledged.withLock { $0[0].count }
        try waitUntil(timeout: 30, interval: 0.1, "the resumed logger acknowledging again") { acknowledged.withLock { $0[0].count } >= before + 10 }
        stop.store(true, ordering: .relaxed)
        _ = writers.wait(timeout: .now() + 20)

        let logged = try WireClient(loggers[1].api, context: context).allEvents().compactMap { $0["data"]?["id"]?.stringValue }
        let acked = acknowledged.withLock { $0.flatMap { $0 } }
        #expect(Set(acked).isSubset(of: Set(logged)), "acknowledged but lost: \(Set(acked).subtracting(logged).count)")
        #expect(Set(logged).count == logged.count)
    }
}
