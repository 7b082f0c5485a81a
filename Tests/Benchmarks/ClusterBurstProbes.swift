import Foundation
import LHTClient
import LHTSchema
import PostgresStorage
import Synchronization
import TestSupport
import ZeroMQ

/// What `bench cluster` watches from a second before a burst's instant until all of it is decided:
/// a client per planner instance asking `reminder.list` over and over, and on PostgreSQL a session
/// of its own taking the planner log row's lock (`SELECT … FOR UPDATE`) over and over, each wait
/// being what a writer of another instance waits for it then.
struct ClusterBurstProbes {
    struct Result {
        /// Seconds from the instant until the last of the burst was decided.
        let seconds: Double
        /// `reminder.list` round trips (ms), per instance.
        let lists: [[Double]]
        /// Waits for the log row's lock (ms); empty on SQLite.
        let lockWaits: [Double]
        /// Unanswered or refused `reminder.list`s.
        let failedLists: Int
    }

    let context: Context
    let planners: [String]
    let user: UserID
    /// On PostgreSQL: the server to take the lock from.
    let postgresURL: String?

    /// Waits until a second before `due`, then probes until `decided()` reaches `count` (at most
    /// `timeout` seconds after `due`).
    func run(due: Instant, count: Int, timeout: TimeInterval, decided: () throws -> Int) throws -> Result {
        let dueDate = Date(timeIntervalSince1970: Double(due.millisecondsSince1970) / 1000)
        Thread.sleep(forTimeInterval: max(0, dueDate.timeIntervalSinceNow - 1))
        let done = Atomic(false), failed = Atomic(0)
        let lists = Mutex([[Double]](repeating: [], count: planners.count)), waits = Mutex<[Double]>([])
        let probes = DispatchGroup()
        // The probes block: each on a thread of its own.
        for (index, endpoint) in planners.enumerated() {
            let context = context, user = user
            probes.startThread {
                let client = ServiceClient(context: context, endpoint: endpoint)
                while !done.load(ordering: .relaxed) {
                    let started = Date()
                    do {
                        _ = try client.call(Ops.reminderList, UserRequest(userId: user), timeoutMilliseconds: 10_000)
                        lists.withLock { $0[index].append(Date().timeIntervalSince(started) * 1000) }
                    } catch {
                        failed.add(1, ordering: .relaxed)
                    }
                    Thread.sleep(forTimeInterval: 0.005)
                }
            }
        }
        if let postgresURL {
            probes.startThread {
                guard let connection = try? PostgresConnection(url: postgresURL) else { return }
                while !done.load(ordering: .relaxed) {
                    let started = Date()
                    guard let transaction = try? connection.begin() else { return }
                    _ = try? transaction.execute("SELECT last_seq FROM reminder_planner.log_head FOR UPDATE")
                    waits.withLock { $0.append(Date().timeIntervalSince(started) * 1000) }
                    try? transaction.rollback()
                    Thread.sleep(forTimeInterval: 0.005)
                }
            }
        }
        defer {
            done.store(true, ordering: .relaxed)
            probes.wait()
        }
        var last = 0
        while true {
            last = try decided()
            if last >= count { break }
            guard Date().timeIntervalSince(dueDate) < timeout else {
                throw BenchError("\(last) of \(count) decided \(Int(timeout)) s after the instant")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let seconds = Date().timeIntervalSince(dueDate)
        done.store(true, ordering: .relaxed)
        probes.wait()
        return Result(seconds: seconds, lists: lists.withLock { $0 }, lockWaits: waits.withLock { $0 }, failedLists: failed.load(ordering: .relaxed))
    }
}

/// Counting a SQLite planner's decisions from its log (`events.since`), from a seq on.
final class DecisionCounter {
    private let client: ServiceClient
    private var after: Int64
    private(set) var count = 0
    static let types: Set = ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"]

    init(context: Context, endpoint: String) throws {
        client = ServiceClient(context: context, endpoint: endpoint)
        after = 0
        after = try page().lastSeq
    }

    private func page() throws -> EventsSinceReply {
        try client.call(Ops.eventsSince, EventsSinceRequest(after: after, limit: 1000), timeoutMilliseconds: 10_000)
    }

    /// Reads what was logged since the last call and returns the decisions counted so far.
    func next() throws -> Int {
        while true {
            let reply = try page()
            guard let last = reply.events.last else { return count }
            count += reply.events.filter { Self.types.contains($0.type) }.count
            after = last.seq
        }
    }
}
