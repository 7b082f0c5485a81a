import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing

/// `GET /v1/events` against the real services: SSE and NDJSON, a cursor that survives the gateway's
/// SIGKILL, every notification exactly once.
@Suite(.serialized) struct HTTPGatewayEventsSystemTests {
    /// Fires a test notification of `reminder` through the planner directly (the gateway may be down).
    func fire(_ rig: GatewayRig, _ reminder: String) throws {
        let planner = ServiceClient(context: rig.system.context, endpoint: rig.system.services[.planner]!.api,
                                    credentials: try adminCredentials(KeyDirectory(rig.system.keys!.path), .reminderPlanner))
        _ = try planner.call(Ops.reminderTest, ReminderTestRequest(reminderId: RecordID(reminder)!), timeoutMilliseconds: 5000)
    }

    func notificationIDs(_ events: [[String: String]]) -> [String] {
        events.compactMap { event in
            let envelope = (try? JSONSerialization.jsonObject(with: Data((event["data"] ?? "").utf8))) as? [String: Any]
            return (envelope?["data"] as? [String: Any])?["notificationId"] as? String
        }
    }

    @Test func sseResumesAfterTheGatewayIsKilledEveryNotificationOnce() throws {
        let rig = try GatewayRig(services: [.planner, .notifier], keys: true)
        let token = try rig.addToken("alice"), bob = try rig.addToken("bob")
        let put = try rig.post("reminder.put", #"{"activity":"noalc","time":"09:00"}"#, token: token)
        #expect(put.status == 200, "\(put.body)")
        let reminder = try #require(put.data["id"] as? String)
        let bobsPut = try rig.post("reminder.put", #"{"activity":"noalc"}"#, token: bob)
        let bobsReminder = try #require(bobsPut.data["id"] as? String)

        // Live: the stream's first id is its start; one notification arrives as an SSE message.
        let first = try rig.stream("?types=notify", token: token)
        try first.waitUntil("the stream's starting id") { first.lastEventID != nil }
        let start = try #require(first.lastEventID)
        try fire(rig, reminder)
        try fire(rig, bobsReminder)  // bob's: never on alice's stream
        try first.waitUntil("the first notification") { first.serverSentEvents.count == 1 }
        let seen = try #require(first.lastEventID)
        #expect(first.serverSentEvents[0]["event"] == "notify")

        // The gateway dies; two more notifications while it is down.
        rig.gateway.process.kill()
        first.terminate()
        try fire(rig, reminder)
        try fire(rig, reminder)
        let admin = ServiceClient(context: rig.system.context, endpoint: rig.system.services[.notifier]!.api,
                                  credentials: try adminCredentials(KeyDirectory(rig.system.keys!.path), .notifier))
        try waitUntil(timeout: 10, interval: 0.1, "three notifications of alice") {
            try admin.call(Ops.notificationList, NotificationListRequest(userId: UserID("alice")!), timeoutMilliseconds: 5000).notifications.count == 3
        }

        // Restarted, on the same port: Last-Event-ID replays exactly the two missed, then live.
        try rig.startGateway(port: rig.port)
        let resumed = try rig.stream("?types=notify", token: token, headers: ["Last-Event-ID: \(seen)"])
        try resumed.waitUntil("the two missed notifications") { resumed.serverSentEvents.count >= 2 }
        try fire(rig, reminder)
        try resumed.waitUntil("the live one after them") { resumed.serverSentEvents.count >= 3 }
        Thread.sleep(forTimeInterval: 0.5)  // anything sent twice would be here by now
        let all = try admin.call(Ops.notificationList, NotificationListRequest(userId: UserID("alice")!), timeoutMilliseconds: 5000).notifications
        #expect(notificationIDs(first.serverSentEvents) == [all[0].notificationId])
        #expect(notificationIDs(resumed.serverSentEvents) == all[1...].map(\.notificationId))
        resumed.terminate()

        // NDJSON from the first stream's start: all four, in order, each with its cursor.
        let lines = try rig.stream("?types=notify&since=\(start)", token: token, headers: ["Accept: application/x-ndjson"])
        try lines.waitUntil("four NDJSON lines") { lines.output.split(separator: "\n").count >= 4 }
        Thread.sleep(forTimeInterval: 0.3)  // time for a fifth line, which must not come
        let objects = lines.output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.compactMap { ($0["data"] as? [String: Any])?["notificationId"] as? String } == all.map(\.notificationId))
        #expect(objects.allSatisfy { $0["cursor"] is String && $0["type"] as? String == "notify" })
        lines.terminate()
    }
}
