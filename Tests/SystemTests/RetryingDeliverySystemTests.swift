import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// `lht subscribe --ntfy`, and targets that are down at first or stay down. The ntfy server is a small
/// Python http.server on loopback that records each request to a file.
@Suite struct RetryingDeliverySystemTests {
    @Test func ntfyGetsOneJSONPublishPerNotification() throws {
        let rig = try DeliveryRig()
        let server = try NtfyRecorder(in: rig.directory)
        let subscriber = try rig.subscribe(["--ntfy", "\(server.base)/lht-dora", "--count", "2", "--max-wait", "30",
                                            "--cursor", rig.file("ntfy.cursor").path],
                                           environment: ["LHT_NTFY_TOKEN": "tk_secret"])
        try rig.fire(rig.noalc)
        try rig.fire(rig.workout)
        let run = try subscriber.finish()
        #expect(run.status == 0, "\(run.stderr)")

        let sent = try rig.notifications(count: 2)
        let requests = try server.requests()
        try #require(requests.count == 2)
        for request in requests {
            #expect(request["method"]?.stringValue == "POST")
            #expect(request["path"]?.stringValue == "/")  // JSON publish: the server's root, the topic in the body
            #expect(request["headers"]?["content-type"]?.stringValue == "application/json")
            #expect(request["headers"]?["authorization"]?.stringValue == "Bearer tk_secret")
            #expect(request["headers"]?["user-agent"]?.stringValue == "lht/1.0.0")
        }
        let bodies = try requests.map { try JSONDecoder().decode(JSONValue.self, from: Data($0["body"]!.stringValue!.utf8)) }
        let day = try #require(sent[0]["targetDay"]?.stringValue)
        func view(_ label: String, _ url: String) -> JSONValue {
            .object(["action": .string("view"), "label": .string(label), "url": .string(url), "clear": .bool(true)])
        }
        #expect(bodies[0] == .object([
            "topic": .string("lht-dora"), "title": .string("NoAlc check-in"), "message": .string("How was yesterday?"),
            "tags": .array([.string("droplet"), .string("noalc"), .string("test")]), "priority": .number(3),
            "click": .string("lht://noalc?day=\(day)"),
            "actions": .array([view("💧 Steady", "lht://noalc?day=\(day)&level=steady"), view("✨ Easy", "lht://noalc?day=\(day)&level=easy"),
                               view("💥 Wild", "lht://noalc?day=\(day)&level=wild")]),
        ]))
        #expect(bodies[1] == .object([
            "topic": .string("lht-dora"), "title": .string("Time for your workout"), "message": .string("Time for your daily workout! 💪"),
            "tags": .array([.string("muscle"), .string("workout"), .string("test")]), "priority": .number(3),
            "click": .string("lht://open/workout"), "actions": .array([view("Start Workout", "lht://open/workout")]),
        ]))
    }

    @Test func aTargetThatIsDownAtFirstGetsEachNotificationOnceAfterRetries() throws {
        let rig = try DeliveryRig()
        // ntfy unreachable: nothing listens on the port until the subscriber has failed and is retrying.
        let port = try freeLoopbackPort()
        let subscriber = try rig.subscribe(["--ntfy", "http://127.0.0.1:\(port)/lht-dora", "--count", "1", "--max-wait", "30",
                                            "--cursor", rig.file("down.cursor").path])
        try rig.fire(rig.workout)
        try subscriber.waitForError("retrying in 1 s")
        // Then up, but busy: two 503s before it takes it.
        let server = try NtfyRecorder(in: rig.directory, port: port, failFirst: 2)
        let run = try subscriber.finish()
        #expect(run.status == 0, "\(run.stderr)")
        let requests = try server.requests()
        #expect(requests.map { $0["status"]?.intValue } == [503, 503, 200])
        #expect(run.stderr.contains("failed on notify.dora.workout"))
        #expect(run.stderr.contains("HTTP 503"))

        // A command that fails (exit status 1) until a file exists: retried, then run once more and delivered once.
        let flag = rig.file("ready")
        let lines = rig.file("after-retries.txt")
        let command = "test -f \(flag.path) || exit 1; printf '%s\\n' \"$LHT_NOTIFICATION_ID\" >> \(lines.path)"
        let retrying = try rig.subscribe(["--exec", command, "--count", "1", "--max-wait", "30", "--cursor", rig.file("exec.cursor").path])
        try rig.fire(rig.noalc)
        try retrying.waitForError("the command exited with 1")
        FileManager.default.createFile(atPath: flag.path, contents: nil)
        let retried = try retrying.finish()
        #expect(retried.status == 0, "\(retried.stderr)")
        let noalc = try rig.notifications(count: 2)[1]["notificationId"]!.stringValue!
        #expect(try String(contentsOf: lines, encoding: .utf8) == noalc + "\n")
    }

    @Test func aTargetThatStaysDownFailsWithinMaxWaitAndKeepsTheCursor() throws {
        let rig = try DeliveryRig()
        let cursor = rig.file("stays.cursor")
        let subscriber = try rig.subscribe(["--exec", "exit 3", "--count", "1", "--max-wait", "3", "--cursor", cursor.path])
        try rig.fire(rig.workout)
        let run = try subscriber.finish()
        #expect(run.status == 3)
        #expect(run.stderr.contains("error: command did not take notify.dora.workout #"))
        // The cursor stays before the notification: a later run delivers it.
        let lines = rig.file("later.txt")
        let later = try rig.subscribe(["--exec", "printf '%s\\n' \"$LHT_TITLE\" >> \(lines.path)", "--count", "1", "--max-wait", "20",
                                       "--cursor", cursor.path])
        #expect(try later.finish().status == 0)
        #expect(try String(contentsOf: lines, encoding: .utf8) == "Time for your workout\n")
    }

}
