import Dispatch
import Foundation
import Glibc
import PostgresStorage
import Storage
import Synchronization
import Testing
import TestSupport

/// The log row (`PostgresLogTables`, docs/storage.md, "The PostgreSQL backend"): against a real PostgreSQL, seqs are 1...N
/// without gaps or duplicates and in commit order, whatever writers race, roll back or die.
/// Serialized: each test starts a server of its own, and a 2-core box runs one at a time better.
@Suite(.serialized) struct PostgresLogTests {
    static let topic = "test.appended"

    @Test func sequentialAppendsAreNumberedFromOneAndReadInOrder() throws {
        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let connection = try postgres.connect()
        let log = PostgresLogTables(service: "session-logger")
        try log.create(on: connection)
        try log.create(on: connection)  // as every later start does: nothing changes

        // Envelopes are bytes, zero and 0xFF included.
        var random = SplitMix64(seed: 1)
        var written: [[UInt8]] = []
        var ranges: [ClosedRange<Int64>] = []
        for size in [1, 3, 2, 5, 1] {
            let records = (0..<size).map { _ in (topic: Self.topic, envelope: [0, 0xFF] + random.bytes(random.below(40))) }
            written += records.map(\.envelope)
            ranges.append(try connection.transaction { try log.append(records, in: $0) }!)
        }
        #expect(ranges == [1...1, 2...4, 5...6, 7...11, 12...12])

        // A batch that rolls back hands its seqs out again; an empty one takes none.
        let abandoned = try connection.begin()
        #expect(try log.append([(topic: Self.topic, envelope: [1, 2, 3])], in: abandoned) == 13...13)
        try abandoned.rollback()
        #expect(try connection.transaction { try log.append([], in: $0) } == nil)
        let last = [UInt8]("last".utf8)
        #expect(try connection.transaction { try log.append([(topic: "test.last", envelope: last)], in: $0) } == 13...13)
        written.append(last)

        let all = try log.since(after: 0, limit: 100, on: connection)
        #expect(all.map(\.seq) == Array(1...13))
        #expect(all.map(\.envelope) == written)
        #expect(all.map(\.topic) == Array(repeating: Self.topic, count: 12) + ["test.last"])
        #expect(try log.since(after: 4, limit: 3, on: connection).map(\.seq) == [5, 6, 7])
        #expect(try log.since(after: 13, limit: 10, on: connection).isEmpty)

        // Another service's log in the same database counts on its own, in its own schema.
        let other = PostgresLogTables(service: "noalc-streak")
        try other.create(on: connection)
        #expect(try connection.transaction { try other.append([(topic: Self.topic, envelope: [7])], in: $0) } == 1...1)
        let schemas = try connection.execute("SELECT schema_name FROM information_schema.schemata WHERE schema_name IN ('session_logger', 'noalc_streak') ORDER BY 1")
        #expect(schemas.map { $0.text(0) } == ["noalc_streak", "session_logger"])
    }

    /// A server of the test's own and `service`'s log in it.
    static func serverAndLog(_ service: String) throws -> (TestPostgres, PostgresLogTables) {
        let postgres = try TestPostgres()
        let log = PostgresLogTables(service: service)
        try log.create(on: try postgres.connect())
        return (postgres, log)
    }

    /// One committed transaction, as its writer saw it.
    struct Committed: Sendable {
        let seqs: ClosedRange<Int64>
        let envelopes: [[UInt8]]
        let beginSent: ContinuousClock.Instant
        let commitReturned: ContinuousClock.Instant
    }

    /// What the writer threads saw.
    final class Outcome: Sendable {
        let committed = Mutex<[Committed]>([])
        /// The records of transactions that were killed or abandoned.
        let lost = Mutex<[[UInt8]]>([])
        let failures = Mutex<[String]>([])
    }

    /// One writer thread: `count` transactions of 1-5 records each on a connection of its own. After
    /// the append, with the log row's lock held, a quarter wait 1-4 ms so that the others pile up
    /// behind it, then commit. `crashing`: one in ten instead has its backend terminated from
    /// another connection and one in ten closes its connection without COMMIT.
    static func write(_ count: Int, thread: Int, crashing: Bool, into log: PostgresLogTables, of postgres: TestPostgres, _ outcome: Outcome) {
        do {
            var connection = try postgres.connect()
            let killer = try postgres.connect()
            var random = SplitMix64(seed: UInt64(thread + (crashing ? 200 : 100)))
            for t in 0..<count {
                let records = (0..<1 + random.below(5)).map { (topic: Self.topic, envelope: Array("w\(thread) t\(t) r\($0)".utf8)) }
                let beginSent = ContinuousClock.now
                let transaction = try connection.begin()
                let seqs = try log.append(records, in: transaction)!
                switch crashing ? random.below(10) : 9 {
                case 0:
                    // The backend dies after the log row's UPDATE, before COMMIT (waiting until it has exited).
                    let pid = connection.backendPID
                    let terminated = try killer.execute("SELECT pg_terminate_backend($1, 10000)", [.integer(Int64(pid))])
                    guard terminated.first?.text(0) == "t" else { throw HarnessError("backend \(pid) was not terminated") }
                    do {
                        try transaction.commit()
                        outcome.failures.withLock { $0.append("w\(thread) t\(t): COMMIT succeeded on a terminated backend") }
                    } catch {
                        guard error.kind == .connection else { throw error }
                    }
                    outcome.lost.withLock { $0 += records.map(\.envelope) }
                    connection = try postgres.connect()
                case 1:
                    // The client goes away without COMMIT.
                    connection.close()
                    outcome.lost.withLock { $0 += records.map(\.envelope) }
                    connection = try postgres.connect()
                default:
                    if random.chance(1, in: 4) { usleep(UInt32(1_000 + random.below(3_000))) }  // varied pacing, so the writers interleave differently
                    try transaction.commit()
                    outcome.committed.withLock {
                        $0.append(Committed(seqs: seqs, envelopes: records.map(\.envelope), beginSent: beginSent, commitReturned: .now))
                    }
                }
            }
        } catch {
            outcome.failures.withLock { $0.append("writer \(thread): \(error)") }
        }
    }

    @Test func concurrentWritersCommitGapFreeInSeqOrder() throws {
        let (postgres, log) = try Self.serverAndLog("reminder-planner")
        defer { postgres.stop() }

        let writers = 4, transactionsEach = 300
        let outcome = Outcome()
        let writing = Atomic<Int>(writers)
        let reader = Mutex<(received: [Int64], gaps: [String])>(([], []))

        onThreads(writers + 1) { thread in
            guard thread == writers else {
                defer { writing.subtract(1, ordering: .releasing) }
                return Self.write(transactionsEach, thread: thread, crashing: false, into: log, of: postgres, outcome)
            }
            // The reader, as a follower reads: from its cursor on, advancing it by what it got.
            do {
                let connection = try postgres.connect()
                var cursor: Int64 = 0, received: [Int64] = [], gaps: [String] = []
                while true {
                    let done = writing.load(ordering: .acquiring) == 0
                    let batch = try log.since(after: cursor, limit: 50, on: connection)
                    for record in batch {
                        if record.seq != cursor + 1 { gaps.append("after \(cursor) came \(record.seq)") }
                        cursor = record.seq
                        received.append(record.seq)
                    }
                    if batch.isEmpty {
                        if done { break }
                        usleep(200)  // a reader's pause before it asks again
                    }
                }
                reader.withLock { $0 = (received, gaps) }
            } catch {
                outcome.failures.withLock { $0.append("reader: \(error)") }
            }
        }
        #expect(outcome.failures.withLock { $0 } == [])
        let transactions = outcome.committed.withLock { $0 }
        #expect(transactions.count == writers * transactionsEach)
        let total = Int64(transactions.reduce(0) { $0 + $1.envelopes.count })

        // Every seq once: the ranges the writers got tile 1...N, and the log holds what each wrote there.
        let handedOut = transactions.flatMap { Array($0.seqs) }.sorted()
        #expect(handedOut == Array(1...total))
        try expectLog(log, holdsExactly: transactions, on: try postgres.connect())

        // Commit order: a transaction begun after another's COMMIT returned has only later seqs.
        var ordered = 0, overlapping = 0
        for a in transactions {
            for b in transactions where a.commitReturned < b.beginSent {
                ordered += 1
                if a.seqs.upperBound >= b.seqs.lowerBound {
                    Issue.record("committed \(a.seqs) before \(b.seqs) began")
                }
            }
            overlapping += transactions.count { b in b.beginSent < a.commitReturned && a.beginSent < b.commitReturned } - 1
        }
        // The writers did race: many transactions were open at the same time.
        #expect(overlapping > 100)
        #expect(ordered > 100_000)

        let (received, gaps) = reader.withLock { $0 }
        #expect(gaps == [])
        #expect(received == Array(1...total))
    }

    @Test func killedAndAbandonedTransactionsLeaveNoTraceAndNoGap() throws {
        let (postgres, log) = try Self.serverAndLog("notifier")
        defer { postgres.stop() }

        let writers = 3, transactionsEach = 120
        let outcome = Outcome()
        onThreads(writers) { thread in Self.write(transactionsEach, thread: thread, crashing: true, into: log, of: postgres, outcome) }
        #expect(outcome.failures.withLock { $0 } == [])
        let transactions = outcome.committed.withLock { $0 }, lostEnvelopes = outcome.lost.withLock { $0 }
        #expect(lostEnvelopes.count > 20)

        let connection = try postgres.connect()
        let all = try expectLog(log, holdsExactly: transactions, on: connection)
        #expect(Set(all.map(\.envelope)).isDisjoint(with: lostEnvelopes))
        // The row holds the last committed seq: the killed transactions' UPDATEs were undone too.
        let total = transactions.reduce(0) { $0 + $1.envelopes.count }
        #expect(try connection.execute("SELECT last_seq FROM notifier.log_head").first?.int64(0) == Int64(total))
    }

    @Test func badURLsAndWrongPasswordsFailWithOneClearLine() throws {
        func failure(_ url: String) -> PostgresError? {
            do {
                _ = try PostgresConnection(url: url)
                return nil
            } catch {
                return error
            }
        }
        func expectOneLine(_ error: PostgresError?, _ kind: PostgresError.Kind, _ text: String) {
            #expect(error?.kind == kind)
            #expect(error?.message.contains(text) == true, "\(error?.message ?? "no error")")
            #expect(error?.message.contains("\n") == false)
        }
        expectOneLine(failure("host=127.0.0.1 dbname=postgres"), .badURL, "invalid PostgreSQL URL: expected postgresql://")
        expectOneLine(failure("postgresql://[::1/postgres"), .badURL, "invalid PostgreSQL URL: end of string reached when looking for matching \"]\"")
        expectOneLine(failure("postgresql://localhost/postgres?colour=blue"), .badURL, "invalid PostgreSQL URL: invalid URI query parameter: \"colour\"")

        let postgres = try TestPostgres()
        defer { postgres.stop() }
        let role = TestPostgres.passwordRole
        let server = "127.0.0.1:\(postgres.port)/postgres"
        _ = try PostgresConnection(url: "postgresql://\(role.name):\(role.password)@\(server)")
        let wrong = failure("postgresql://\(role.name):not-the-password@\(server)")
        expectOneLine(wrong, .connection, "cannot connect to PostgreSQL: connection to server at \"127.0.0.1\", port \(postgres.port) failed: FATAL: password authentication failed for user \"\(role.name)\"")
        #expect(wrong?.message.contains("not-the-password") == false)

        // Nothing listens there: libpq's two lines (the refusal and its hint) become one.
        let closed = try freeLoopbackPort()
        expectOneLine(failure("postgresql://postgres@127.0.0.1:\(closed)/postgres"), .connection,
                      "port \(closed) failed: Connection refused Is the server running on that host and accepting TCP/IP connections?")
    }
}

/// Reads the whole log and expects exactly the committed transactions' records, each at the seqs its
/// writer was given, and seqs 1...N.
@discardableResult
private func expectLog(_ log: PostgresLogTables, holdsExactly transactions: [PostgresLogTests.Committed],
                       on connection: PostgresConnection) throws -> [LogRecord] {
    var all: [LogRecord] = []
    while true {
        let page = try log.since(after: all.last?.seq ?? 0, limit: 1000, on: connection)
        if page.isEmpty { break }
        all += page
    }
    let total = transactions.reduce(0) { $0 + $1.envelopes.count }
    #expect(all.map(\.seq) == Array(stride(from: 1, through: Int64(total), by: 1)))
    // Seqs handed out twice are a failure of the caller's own check, not a crash here.
    let expected = Dictionary(transactions.flatMap { zip($0.seqs, $0.envelopes) }, uniquingKeysWith: { first, _ in first })
    #expect(all.allSatisfy { expected[$0.seq] == $0.envelope })
    return all
}

/// Runs `body(0)`, `body(1)`, ... each on a thread of its own, all at once, and waits for them.
/// Threads, not a dispatch queue: on 2 cores concurrentPerform would run two at a time.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread { body(index); group.leave() }.start()
    }
    group.wait()
}

/// A logged record as the tests read it back.
private struct LogRecord: Equatable { let seq: Int64, topic: String, envelope: [UInt8] }

/// A writer's batch and a follower's read, as `PostgresStore` and `EventLog` make them.
extension PostgresLogTables {
    /// Appends `records` in the caller's transaction: the lock, the rows and the row moved (queued,
    /// to go out with the COMMIT). Returns their seqs; nil for no records: nothing is locked.
    fileprivate func append(_ records: [(topic: String, envelope: [UInt8])], in transaction: PostgresTransaction) throws -> ClosedRange<Int64>? {
        guard !records.isEmpty else { return nil }
        let first = try lock(in: transaction) + 1, last = first + Int64(records.count) - 1
        let store = PostgresStoreConnection(transaction.connection)
        for (offset, record) in records.enumerated() {
            try store.executeLater(insertStatement, [.integer(first + Int64(offset)), .text(record.topic), .blob(Data(record.envelope))])
        }
        try advance(to: last, in: transaction)
        return first...last
    }
    /// The committed records after `seq`, in seq order, at most `limit`.
    fileprivate func since(after seq: Int64, limit: Int, on connection: PostgresConnection) throws(PostgresError) -> [LogRecord] {
        try connection.execute("SELECT seq, topic, envelope FROM \(schemaName).log WHERE seq > $1 ORDER BY seq LIMIT $2",
                               [.integer(seq), .integer(Int64(limit))])
            .map { row in LogRecord(seq: row.int64(0) ?? 0, topic: row.text(1) ?? "", envelope: row.bytes(2) ?? []) }
    }
}
