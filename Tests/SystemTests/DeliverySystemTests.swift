import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// `lht subscribe --exec/--desktop/--cursor` and `lht status`, through the built `lht` against the real
/// session logger, planner (manual clock) and notifier; test notifications are fired with `lht reminder test`.
@Suite struct DeliverySystemTests {
    @Test func execRunsTheCommandPerNotificationWithItsFields() throws {
        let rig = try DeliveryRig()
        let lines = rig.file("exec.txt")
        let command = #"printf "%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n" "$LHT_NOTIFICATION_ID" "$LHT_TITLE" "$LHT_BODY" "$LHT_ACTIVITY" "#
            + #""$LHT_USER_ID" "$LHT_CATEGORY" "$LHT_DEEP_LINK" "$LHT_TARGET_DAY" "$LHT_SCHEDULED_FOR" "$LHT_ACTIONS" >> "#
            + "\(lines.path); printf '%s\\n' \"$LHT_EVENT\" >> \(rig.file("events.txt").path)"
        let cursor = rig.file("state/exec.cursor")
        let subscriber = try rig.subscribe(["--exec", command, "--cursor", cursor.path, "--count", "2", "--max-wait", "30"])
        try rig.fire(rig.noalc)
        try rig.fire(rig.workout)
        let run = try subscriber.finish()
        #expect(run.status == 0, "\(run.stderr)")

        let sent = try rig.notifications(count: 2)
        func field(_ item: JSONValue, _ name: String) -> String { item[name]?.stringValue ?? "" }
        let expected = sent.map { item in
            [field(item, "notificationId"), field(item, "title"), field(item, "body"), field(item, "activity"), field(item, "userId"),
             field(item, "category"), field(item, "deepLink"), field(item, "targetDay"), field(item, "scheduledFor"),
             item["actions"]!.arrayValue.map { field($0, "id") }.joined(separator: " ")].joined(separator: "|") + "\n"
        }.joined()
        #expect(try String(contentsOf: lines, encoding: .utf8) == expected)
        #expect(expected.contains("|NoAlc check-in|How was yesterday?|noalc|dora|noalc|lht://noalc?day="))
        #expect(expected.contains("|noalc.steady noalc.easy noalc.wild\n"))
        #expect(expected.contains("|Time for your workout|Time for your daily workout! 💪|workout|dora|workout|lht://open/workout||"))
        // LHT_EVENT is the whole envelope, the notification in its data.
        let events = try String(contentsOf: rig.file("events.txt"), encoding: .utf8).split(separator: "\n")
            .map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        #expect(events.map { $0["type"]?.stringValue } == ["notify", "notify"])
        #expect(events.map { $0["data"]?["notificationId"] } == sent.map { $0["notificationId"] })

        // The cursor: the last delivered seq per publisher, readable by its owner only.
        #expect(try String(contentsOf: cursor, encoding: .utf8) == "{\"notifier\":\(sent[1]["seq"]!.intValue!)}\n")
        let mode = try FileManager.default.attributesOfItem(atPath: cursor.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func missedWhileDownIsDeliveredOnceOnRestart() throws {
        let rig = try DeliveryRig()
        let lines = rig.file("delivered.txt")
        let command = "printf '%s\\n' \"$LHT_NOTIFICATION_ID\" >> \(lines.path)"
        let cursor = ["--cursor", rig.file("restart.cursor").path]
        func delivered() -> [String] { ((try? String(contentsOf: lines, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

        // Running: the first arrives; then the subscriber is stopped (SIGTERM while the command still runs:
        // it finishes the hand-over and writes the cursor before it exits with 128 + 15).
        let first = try rig.subscribe(["--exec", command + "; sleep 0.5"] + cursor)
        try rig.fire(rig.noalc)
        try waitUntil(timeout: 15, interval: 0.05, "the first delivery") { delivered().count == 1 }
        #expect(first.terminate() == 128 + SIGTERM)

        // Down: two more are sent.
        try rig.fire(rig.workout)
        try rig.fire(rig.noalc)
        _ = try rig.notifications(count: 3)
        Thread.sleep(forTimeInterval: 0.5)  // time for a delivery that must not happen
        #expect(delivered().count == 1)

        // Restarted: the two it missed, each once, in order.
        let second = try rig.subscribe(["--exec", command, "--count", "2", "--max-wait", "20"] + cursor)
        let run = try second.finish()
        #expect(run.status == 0, "\(run.stderr)")
        let sent = try rig.notifications(count: 3).map { $0["notificationId"]!.stringValue! }
        #expect(delivered() == sent)

        // Again: nothing is left to deliver, and a new one is delivered once.
        let third = try rig.subscribe(["--exec", command, "--count", "1", "--max-wait", "20"] + cursor)
        Thread.sleep(forTimeInterval: 1.5)  // a heartbeat or two: the catch-up has nothing
        #expect(delivered() == sent)
        try rig.fire(rig.workout)
        #expect(try third.finish().status == 0)
        let all = try rig.notifications(count: 4).map { $0["notificationId"]!.stringValue! }
        #expect(delivered() == all)
        #expect(Set(all).count == 4)
    }

    @Test func desktopUsesNotifySendOnlyWhereThereIsASession() throws {
        let rig = try DeliveryRig()
        let noSession = try rig.subscribe(["--desktop"], waitForListening: false)
        let refused = try noSession.finish()
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--desktop needs a desktop session (DISPLAY, WAYLAND_DISPLAY or DBUS_SESSION_BUS_ADDRESS)"))

        // A stand-in notify-send on PATH records its arguments.
        let bin = rig.file("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let calls = rig.file("notify-send.txt")
        let fake = bin.appendingPathComponent("notify-send")
        try "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done >> \(calls.path)\necho >> \(calls.path)\n".write(to: fake, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        let subscriber = try rig.subscribe(["--desktop", "--count", "1", "--max-wait", "20", "--cursor", rig.file("desktop.cursor").path],
                                           environment: ["DISPLAY": ":99", "PATH": bin.path + ":/usr/bin:/bin"])
        try rig.fire(rig.workout)
        #expect(try subscriber.finish().status == 0)
        #expect(try String(contentsOf: calls, encoding: .utf8) == "[--app-name=lht][--][Time for your workout][Time for your daily workout! 💪]\n")
    }

    @Test func statusShowsEveryServiceOnOneScreen() throws {
        let rig = try DeliveryRig()
        // A stand-in streak service whose health reports an upstream behind and a last error.
        let streak = try FakeHealthService(reply: #"{"service":"noalc-streak","version":"9.9.9","uptimeSeconds":3725,"lastSeq":12,"#
            + #""counters":{},"upstreams":[{"name":"session-logger","appliedSeq":40,"upstreamSeq":43,"lag":3}],"#
            + #""lastError":"session-logger did not answer events.since","owns":{"partitions":3,"of":64,"leaseAgeSeconds":1.46}}"#)
        let flags = ["--session-logger", rig.rig.logger.api, "--planner", rig.rig.planner.api, "--notifier", "tcp://127.0.0.1:1",
                     "--streak", streak.endpoint, "--timeout", "1"]
        let run = try runChild(["status"] + flags)
        #expect(run.status == 3)  // the notifier did not answer
        #expect(run.seconds < 3)  // asked at once: one timeout
        let rows = run.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(rows.count == 5)
        #expect(rows[0] == "service api status instance version uptime last seq owns lease upstreams last error")
        #expect(rows[1].hasPrefix("session-logger \(rig.rig.logger.api) up ") && rows[1].contains(" 1.0.0 "), "\(rows[1])")  // instance <host>:<pid>
        #expect(rows[2].hasPrefix("reminder-planner \(rig.rig.planner.api) up ") && rows[2].contains("/64 "), "\(rows[2])")
        #expect(rows[3] == "notifier tcp://127.0.0.1:1 down no answer within 1 s")
        #expect(rows[4] == "noalc-streak \(streak.endpoint) up - 9.9.9 1h02m 12 3/64 1.5 s session-logger lag 3 (40/43) session-logger did not answer events.since")

        let json = try runChild(["status", "--json"] + flags)
        #expect(json.status == 3)
        let services = try JSONDecoder().decode(JSONValue.self, from: Data(json.stdout.utf8))["services"]!.arrayValue
        #expect(services.map { $0["service"]?.stringValue } == ["session-logger", "reminder-planner", "notifier", "noalc-streak"])
        #expect(services.map { $0["up"]?.boolValue } == [true, true, false, true])
        #expect(services[2]["error"]?.stringValue == "no answer at tcp://127.0.0.1:1 within 1 s")
        #expect(services[3]["upstreams"] == .array([.object(["name": .string("session-logger"), "appliedSeq": .number(40),
                                                             "upstreamSeq": .number(43), "lag": .number(3)])]))
        #expect(services[3]["lastError"]?.stringValue == "session-logger did not answer events.since")
        #expect(services[0]["lastError"] == .null)
        #expect(services[3]["owns"] == .object(["partitions": .number(3), "of": .number(64), "leaseAgeSeconds": .number(1.46)]))
        #expect(services[3]["ownedPartitions"] == .object(["partitions": .number(3), "of": .number(64)]))
    }
}
