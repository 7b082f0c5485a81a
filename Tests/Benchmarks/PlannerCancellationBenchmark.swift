import Foundation
import GRDB
import LHTClient
import LHTSchema
import Logging
import ReminderPlanner
import ReminderPlanning
import ServiceHost
import Storage
import SessionLogger
import TestSupport
import ZeroMQ
/// Session-to-cancellation latency through a logger and a planner, and the small helpers the benchmark prints with.
extension PlannerBenchmark {
    static func cancellationLatency(context: Context, logger: InProcessService, planner: InProcessService, users: Int, sessions: Int) throws {
        let (ack, _, cancel) = try cancellations(context: context, logger: logger, planner: planner, users: users, sessions: sessions)
        let commit = try SessionLogBenchmark.commitLatencies(count: max(sessions, 1000))
        print("covering session → reminder.cancelled (\(cancel.count)/\(sessions) observed)")
        print(String(format: "  session.log ack round trip      p50 %6.3f ms   p99 %6.3f ms", LoadClients.percentile(ack, 0.5), LoadClients.percentile(ack, 0.99)))
        print(String(format: "  baseline: bare one-row commit   p50 %6.3f ms   p99 %6.3f ms   (synchronous=FULL)",
                     LoadClients.percentile(commit, 0.5), LoadClients.percentile(commit, 0.99)))
        let p50 = LoadClients.percentile(cancel, 0.5), p99 = LoadClients.percentile(cancel, 0.99)
        print(String(format: "  ack → reminder.cancelled        p50 %6.3f ms   p99 %6.3f ms   ratio p99 %.1f × ack p99, %.1f × commit p99",
                     p50, p99, p99 / LoadClients.percentile(ack, 0.99), p99 / LoadClients.percentile(commit, 0.99)))
        // The target is p50 ≤ 0.5 ms; the stricter 0.4 ms asked for earlier is kept in view.
        print("  target p50 ≤ 0.5 ms, p99 ≤ 1 ms: \(verdict(p50 <= 0.5 && p99 <= 1)); with p50 ≤ 0.4 ms: \(verdict(p50 <= 0.4 && p99 <= 1))")
    }

    /// Sessions for users whose reminders are still ahead of the clock: each one covers an undecided
    /// occurrence. Per session (ms): its session.log ack round trip; from the ack to the logger's
    /// `session.logged` for the user, which the planner reacts to (the logger's share of what
    /// follows); and from the ack to the planner's first `reminder.cancelled` for the user. A
    /// session whose announcement never came has no figure.
    static func cancellations(context: Context, logger: InProcessService, planner: InProcessService, users: Int,
                              sessions: Int, firstUser: Int? = nil) throws -> (ack: [Double], logged: [Double], cancel: [Double]) {
        func subscriber(_ endpoint: String, _ event: String) throws -> Socket {
            let socket = try Socket(context, .sub)
            try socket.subscribe(event + ".")
            try socket.connect(endpoint)
            try socket.setReceiveTimeout(milliseconds: 2000)
            return socket
        }
        let loggedEvents = try subscriber(logger.events, Events.sessionLogged.name)
        let cancelledEvents = try subscriber(planner.events, Events.reminderCancelled.name)
        /// Milliseconds from `acked` to the first event on `socket` whose topic starts with `prefix`.
        func first(_ socket: Socket, _ prefix: String, after acked: UInt64) throws -> Double? {
            while let frames = try socket.receiveMultipart() {
                if String(decoding: frames[0], as: UTF8.self).hasPrefix(prefix) { return Double(DispatchTime.now().uptimeNanoseconds - acked) / 1_000_000 }
            }
            return nil
        }
        let loggerClient = ServiceClient(context: context, endpoint: logger.api)
        Thread.sleep(forTimeInterval: 0.3)  // the subscriptions reach their publishers (slow joiner) before the first session
        var ack: [Double] = [], logged: [Double] = [], cancel: [Double] = []
        let now = Instant.now()
        for n in 0..<sessions {
            let user = UserID("u\(((firstUser ?? users / 2) + n) % users)")!
            // 20 hours long and ending an hour ago: with a 12-hour look-back it overlaps every daily time.
            let end = now.adding(seconds: -Int64(3600 + n))
            let request = SessionLogRequest(userId: user, activity: .mindfulness, start: end.adding(seconds: -20 * 3600), end: end)
            let sent = DispatchTime.now().uptimeNanoseconds
            guard (try? loggerClient.call(Ops.sessionLog, request, timeoutMilliseconds: 5000)) != nil else { continue }
            let acked = DispatchTime.now().uptimeNanoseconds
            ack.append(Double(acked - sent) / 1_000_000)
            // The logger publishes before the planner can react, so waiting for it first delays neither reading.
            try first(loggedEvents, Events.sessionLogged.prefix(userId: user), after: acked).map { logged.append($0) }
            // The first announcement for this user marks the planner's reaction.
            try first(cancelledEvents, Events.reminderCancelled.prefix(userId: user), after: acked).map { cancel.append($0) }
            // Later announcements of this session (other covered occurrences) are drained before the next.
            while (try? cancelledEvents.receiveMultipart(dontWait: true)) ?? nil != nil {}
        }
        return (ack, logged, cancel)
    }

    static func time(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000_000
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    static func verdict(_ met: Bool) -> String { met ? "met" : "NOT met" }
}
