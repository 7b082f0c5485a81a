import Foundation
import LHTSchema
import Testing
import ZeroMQ

/// A planner rig (session logger + planner on a manual clock) and a notifier following both.
final class NotifierRig {
    let planner: PlannerRig
    let notifier: ServiceProcess
    private(set) var client: WireClient

    var context: Context { planner.context }
    var upstreamArguments: [String] {
        ["--planner-api", planner.planner.api, "--planner-events", planner.planner.events, "--session-logger-api", planner.logger.api]
    }

    init(clock: String = NotifierSystemTests.mondayMorning) throws {
        planner = try PlannerRig(clock: clock)
        notifier = try ServiceProcess("notifier", arguments: [
            "--planner-api", planner.planner.api, "--planner-events", planner.planner.events, "--session-logger-api", planner.logger.api,
        ])
        client = try WireClient(notifier.api, context: planner.context)
    }

    /// After a notifier restart its ports are new.
    func reconnect() throws { client = try WireClient(notifier.api, context: context) }

    /// The user's notifications once there are at least `count` (delivery is asynchronous), or what there is at the deadline.
    func notifications(_ user: String, count: Int, client: WireClient? = nil, timeout: TimeInterval = 10) throws -> [JSONValue] {
        var list: [JSONValue] = []
        // At the deadline the caller's count check says what is missing.
        _ = try? waitUntil(timeout: timeout, interval: 0.02, "\(count) notifications of \(user)") {
            list = try (client ?? self.client).ok("notification.list", ["userId": user])["notifications"]!.arrayValue
            return list.count >= count
        }
        return list
    }

    func counter(_ name: String) throws -> Int64? { try client.ok("health")["counters"]?[name]?.intValue }

    /// Waits until the notifier has notified or dropped `handled` occurrences in all.
    func settle(handled: Int, timeout: TimeInterval = 30) throws {
        try waitUntil(timeout: timeout, interval: 0.02, "the notifier handling \(handled) occurrences") {
            try (counter("notified") ?? 0) + (counter("rateLimited") ?? 0) >= handled
        }
    }
}
