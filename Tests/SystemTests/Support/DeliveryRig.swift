import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// A session logger, a planner on a manual clock and a notifier (no rate limit), with a user "dora"
/// (English) and a NoAlc and a workout reminder to fire as tests.
final class DeliveryRig {
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
        try waitUntil(timeout: 15, interval: 0.05, "\(count) notifications") {
            list = (try? notifierClient.ok("notification.list", ["userId": "dora"]))?["notifications"]?.arrayValue ?? []
            return list.count >= count
        }
        return list
    }
}
/// An ntfy stand-in: Python's http.server on loopback answering every POST/PUT (503 for the first
/// `failFirst`, then 200) and appending {method, path, headers, body, status} per request to a file.
final class NtfyRecorder {
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
final class FakeHealthService: @unchecked Sendable {
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
func runChild(_ arguments: [String]) throws -> ProcessRun { try child(arguments).finish() }

/// A child process (`lht` unless told otherwise) with its outputs collected, without the test's LHT_*
/// variables, proxies or desktop session; `environment` adds to that.
func child(_ arguments: [String], executable: URL = BuildProducts.executable("lht"),
                   environment: [String: String] = [:]) throws -> CapturedProcess {
    try userProcess(executable, arguments, dropping: ["NO_COLOR", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
                                                      "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
                    environment: environment)
}
