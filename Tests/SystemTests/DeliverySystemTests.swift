import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// `lht subscribe --exec/--desktop/--ntfy/--cursor` and `lht status`, through the built `lht` against the real
/// session logger, planner (manual clock) and notifier; test notifications are fired with `lht reminder test`.
/// The ntfy server is a small Python http.server on loopback that records each request to a file.
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
        try waitUntil("the first delivery") { delivered().count == 1 }
        #expect(first.terminate() == 128 + SIGTERM)

        // Down: two more are sent.
        try rig.fire(rig.workout)
        try rig.fire(rig.noalc)
        _ = try rig.notifications(count: 3)
        Thread.sleep(forTimeInterval: 0.5)
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

// MARK: The system under test

/// A session logger, a planner on a manual clock and a notifier (no rate limit), with a user "dora"
/// (English) and a NoAlc and a workout reminder to fire as tests.
private final class DeliveryRig {
    let rig: PlannerRig
    let notifier: ServiceProcess
    let notifierClient: WireClient
    let directory = temporaryDirectory("lht-delivery")
    let noalc: String
    let workout: String

    init() throws {
        rig = try PlannerRig(clock: "2026-11-16T08:00:00+01:00")
        notifier = try ServiceProcess("notifier", arguments: [
            "--planner-api", rig.planner.api, "--planner-events", rig.planner.events, "--session-logger-api", rig.logger.api,
            "--rate-limit-minutes", "0",
        ])
        notifierClient = try WireClient(notifier.api, context: rig.context)
        try rig.user("dora", locale: "en")
        noalc = try rig.reminder("dora", "noalc", "09:00")
        workout = try rig.reminder("dora", "workout", "12:00")
    }

    func file(_ name: String) -> URL { directory.appendingPathComponent(name) }

    var apiFlags: [String] {
        ["--session-logger", rig.logger.api, "--planner", rig.planner.api, "--notifier", notifier.api, "--streak", "tcp://127.0.0.1:1"]
    }

    /// `lht reminder test <id>`: a test notification now.
    func fire(_ reminder: String) throws {
        let run = try runChild(["reminder", "test", reminder] + apiFlags)
        guard run.status == 0 else { throw HarnessError("reminder test failed: \(run.stderr)") }
    }

    /// `lht subscribe --user dora` at the notifier, returned once it listens.
    func subscribe(_ arguments: [String], environment: [String: String] = [:], waitForListening: Bool = true) throws -> CapturedProcess {
        let subscriber = try child(["subscribe", "--user", "dora", "--notifier-events", notifier.events, "--notifier", notifier.api] + arguments,
                                   environment: environment)
        if waitForListening { try subscriber.waitForError("listening on ") }
        return subscriber
    }

    /// dora's notifications as the notifier lists them, after waiting for `count` of them.
    func notifications(count: Int) throws -> [JSONValue] {
        var list: [JSONValue] = []
        try waitUntil("\(count) notifications") {
            list = (try? notifierClient.ok("notification.list", ["userId": "dora"]))?["notifications"]?.arrayValue ?? []
            return list.count >= count
        }
        return list
    }
}

private func waitUntil(_ what: String, timeout: TimeInterval = 15, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw HarnessError("timed out waiting for \(what)") }
        Thread.sleep(forTimeInterval: 0.05)
    }
}

/// A port on 127.0.0.1 that nothing listens on right now.
private func freeLoopbackPort() throws -> Int {
    let run = try child(["python3", "-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"],
                        executable: URL(fileURLWithPath: "/usr/bin/env")).finish()
    guard let port = Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else { throw HarnessError("no free port: \(run.stderr)") }
    return port
}

/// An ntfy stand-in: Python's http.server on loopback answering every POST/PUT (503 for the first
/// `failFirst`, then 200) and appending {method, path, headers, body, status} per request to a file.
private final class NtfyRecorder {
    static let script = """
        import http.server, json, sys, threading
        port, log, fail_first = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
        lock, seen = threading.Lock(), [0]
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self): self.publish()
            def do_PUT(self): self.publish()
            def publish(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8")
                with lock:
                    seen[0] += 1
                    status = 503 if seen[0] <= fail_first else 200
                    with open(log, "a") as f:
                        f.write(json.dumps({"method": self.command, "path": self.path, "status": status, "body": body,
                                            "headers": {k.lower(): v for k, v in self.headers.items()}}) + "\\n")
                reply = json.dumps({"id": "m%d" % seen[0], "event": "message"} if status == 200 else {"http": 503, "error": "busy"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        print("listening", server.server_address[1], flush=True)
        server.serve_forever()
        """

    let process: CapturedProcess
    let log: URL
    let base: String

    init(in directory: URL, port: Int = 0, failFirst: Int = 0) throws {
        let script = directory.appendingPathComponent("ntfy_recorder.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        log = directory.appendingPathComponent("ntfy-requests-\(UUID().uuidString.prefix(6)).jsonl")
        process = try child(["python3", script.path, String(port), log.path, String(failFirst)], executable: URL(fileURLWithPath: "/usr/bin/env"))
        try process.waitForOutput("listening ")
        guard let bound = process.output.split(separator: " ").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) else {
            throw HarnessError("the ntfy recorder printed no port: \(process.output)")
        }
        base = "http://127.0.0.1:\(bound)"
    }

    func requests() throws -> [JSONValue] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { try JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
    }
}

/// A ROUTER on a wildcard loopback port answering every request with one canned `health` reply.
private final class FakeHealthService: @unchecked Sendable {
    let endpoint: String
    private let context: Context
    private let socket: Socket
    private let stopped = Atomic<Bool>(false)

    init(reply data: String) throws {
        context = try Context()
        socket = try Socket(context, .router)
        endpoint = try socket.bind("tcp://127.0.0.1:*")
        let frame = Data("{\"v\":1,\"ok\":true,\"data\":\(data)}".utf8)
        Thread.detachNewThread { [self] in
            while !stopped.load(ordering: .relaxed) {
                guard (try? Poller.readable([socket], timeoutMilliseconds: 100))?.first == true,
                      let frames = try? socket.receiveMultipart(dontWait: true), frames.count >= 2 else { continue }
                _ = try? socket.send(multipart: Array(frames.dropLast()) + [frame])
            }
        }
    }

    deinit { stopped.store(true, ordering: .relaxed) }
}

// MARK: Processes

/// `lht <arguments>` to its end.
private func runChild(_ arguments: [String]) throws -> ProcessRun { try child(arguments).finish() }

/// A child process (`lht` unless told otherwise) with its outputs collected, without the test's LHT_*
/// variables, proxies or desktop session; `environment` adds to that.
private func child(_ arguments: [String], executable: URL = BuildProducts.executable("lht"),
                   environment: [String: String] = [:]) throws -> CapturedProcess {
    try userProcess(executable, arguments, dropping: ["NO_COLOR", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
                                                      "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
                    environment: environment)
}
