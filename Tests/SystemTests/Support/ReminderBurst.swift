import Foundation
import LHTSchema
import Synchronization
import ZeroMQ

/// Reminders at one whole minute in every partition, put by four writers through the given
/// planners in turn. The minute is chosen from a timed sample of puts first (users of their own, at
/// another time of day): a loaded CI box takes several times as long as an idle one, and a fixed
/// lead either fails there or waits for nothing here.
struct ReminderBurst {
    let due: Instant
    /// The ids of the burst's reminders, in no particular order.
    let ids: [String]
    /// One user per partition, each with `perUser` of the reminders.
    let users: [String]

    /// `lead`: seconds at least between the puts' projected end and the instant.
    init(_ prefix: String, perUser: Int, through endpoints: [String], context: Context, lead: Double) throws {
        users = usersOnePerPartition(prefix)
        let sampleUsers = (0..<4).map { "\(prefix)-sample\($0)" }, samplePerUser = 8
        let sampleStarted = Date()
        _ = try Self.put(sampleUsers, perUser: samplePerUser, at: Instant.now().adding(seconds: 12 * 3600), through: endpoints, context: context)
        let perPut = Date().timeIntervalSince(sampleStarted) / Double(sampleUsers.count * samplePerUser)
        // The sample's puts are the planners' first, and slower than the burst's: on the safe side.
        let projected = perPut * Double(users.count * perUser)
        due = Instant.nextWholeMinute(atLeastSecondsAway: Int64((projected + lead).rounded(.up)))
        ids = try Self.put(users, perUser: perUser, at: due, through: endpoints, context: context)
    }

    private static func put(_ users: [String], perUser: Int, at time: Instant, through endpoints: [String], context: Context) throws -> [String] {
        let ids = Mutex<[String]>([]), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { writer in
            do {
                let client = try WireClient(endpoints[writer % endpoints.count], context: context)
                for user in users.enumerated().filter({ $0.offset % 4 == writer }).map(\.element) {
                    for _ in 0..<perUser {
                        let id = try client.ok("reminder.put", ["userId": user, "activity": "workout", "time": time.utcReminderTime])["id"]?.stringValue
                        ids.withLock { $0.append(id ?? "") }
                    }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let failed = failures.withLock { $0 }
        guard failed.isEmpty else { throw HarnessError("reminder.put failed: \(failed.prefix(2))") }
        return ids.withLock { $0 }
    }
}
