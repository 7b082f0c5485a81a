import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// `deploy/lht-services` against the built executables: it starts the whole system once, a second
/// start starts nothing, and stop leaves no process behind; with --postgres, two instances of the
/// clustered services over one PostgreSQL of its own. The script's ports are fixed (PROTOCOL's
/// defaults, 74xx, PostgreSQL 7340), so the tests take turns.
@Suite(.serialized) struct DeployScriptTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy/lht-services")

    func run(_ arguments: [String], dataDirectory: URL) throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["LHT_BIN_DIR"] = BuildProducts.directory.path
        // A file, not a pipe: the services the script leaves running inherit its descriptors, and a
        // pipe would then never reach end-of-file.
        let log = temporaryDirectory("lht-deploy-out").appendingPathComponent("\(arguments[0]).out")
        let bash = try ChildProcess("/bin/bash", [Self.script.path] + arguments + ["--data-dir", dataDirectory.path, "--no-build"],
                                      environment: environment, stdout: .file(log.path), stderr: .file(log.path))
        return (bash.wait().status, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
    }

    /// Runs `executable` with only `environment`'s LHT_* variables; its exit status.
    func shell(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Int32 {
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LHT_") }.merging(environment) { $1 }
        return try ChildProcess(executable, arguments, environment: environment, stdout: .null, stderr: .null).wait().status
    }

    func pids(in directory: URL, of names: [String] = ["session-logger", "reminder-planner", "notifier", "noalc-streak"]) -> [Int32] {
        names.compactMap { service in
            (try? String(contentsOf: directory.appendingPathComponent("\(service).pid"), encoding: .utf8))
                .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
    }

    @Test func startsOnceAndStopsWithoutLeftovers() throws {
        let directory = temporaryDirectory("lht-deploy")
        defer { _ = try? run(["stop"], dataDirectory: directory) }
        let first = try run(["start"], dataDirectory: directory)
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("api=tcp://127.0.0.1:7301"))
        let started = pids(in: directory)
        #expect(started.count == 4)

        // Keys on first start (lht keys init), every service with --keys, and the line that points lht at them.
        let keys = directory.appendingPathComponent("keys")
        #expect(first.output.contains("created keys in \(keys.path)"))
        #expect(first.output.contains("export LHT_KEYS=\(keys.path)"))
        #expect(FileManager.default.fileExists(atPath: keys.appendingPathComponent("services/session-logger.key_secret").path))
        #expect(FileManager.default.fileExists(atPath: keys.appendingPathComponent("admin.key_secret").path))
        for pid in started {
            let arguments = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            #expect(arguments.split(separator: "\0").contains("--keys"), "pid \(pid): \(arguments)")
        }
        // The services speak CURVE only: lht with LHT_KEYS is answered, plaintext is not.
        let lht = BuildProducts.executable("lht").path
        #expect(try shell(lht, ["health", "--timeout", "2"], environment: ["LHT_KEYS": keys.path]) == 0)
        #expect(try shell(lht, ["health", "session-logger", "--timeout", "1"], environment: [:]) == 3)

        let second = try run(["start"], dataDirectory: directory)
        #expect(second.status == 0, "\(second.output)")
        #expect(!second.output.contains("created keys"))
        #expect(second.output.components(separatedBy: "(already running)").count - 1 == 5)  // the four services and the gateway
        #expect(pids(in: directory) == started)
        #expect(try run(["status"], dataDirectory: directory).status == 0)

        let stopped = try run(["stop"], dataDirectory: directory)
        #expect(stopped.status == 0, "\(stopped.output)")
        #expect(started.allSatisfy { kill($0, 0) != 0 }, "a service is still running")
        #expect(try run(["status"], dataDirectory: directory).status == 3)
    }

    /// PROTOCOL "Cluster (PostgreSQL)" on one machine: `start --postgres` runs PostgreSQL in the data
    /// directory and two instances of every service on it, each started and ready alike (the
    /// planner's two sharing the 64 partitions); instances of a service share one log and each sees
    /// the other's writes; `stop` leaves neither a service nor PostgreSQL running.
    @Test func startsTwoInstancesOnPostgreSQLAndStopsEverything() throws {
        let directory = temporaryDirectory("lht-deploy-pg")
        defer { _ = try? run(["stop"], dataDirectory: directory) }
        let first = try run(["start", "--postgres"], dataDirectory: directory)
        try #require(first.status == 0, "\(first.output)")
        #expect(first.output.contains("api=tcp://127.0.0.1:7301"), "\(first.output)")
        #expect(first.output.contains("api=tcp://127.0.0.1:7401"), "\(first.output)")
        let names = ["session-logger@a", "session-logger@b", "reminder-planner@a", "reminder-planner@b", "notifier@a", "notifier@b",
                     "noalc-streak@a", "noalc-streak@b"]
        let started = pids(in: directory, of: names)
        #expect(started.count == 8)
        // The planner's b is ready as every other instance is, on its 74xx ports.
        #expect(first.output.contains("api=tcp://127.0.0.1:7411"), "\(first.output)")
        let postmaster = try #require((try? String(contentsOf: directory.appendingPathComponent("postgres/data/postmaster.pid"), encoding: .utf8))
            .flatMap { $0.split(separator: "\n").first.flatMap { Int32($0) } }, "no postmaster.pid")
        // The database password only in a file of the owner's.
        let pgpass = directory.appendingPathComponent("postgres.pgpass").path
        let mode = (try FileManager.default.attributesOfItem(atPath: pgpass)[.posixPermissions] as? Int) ?? -1
        #expect(mode == 0o600, "postgres.pgpass is \(String(mode, radix: 8))")
        let password = try String(contentsOfFile: pgpass, encoding: .utf8).split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect((password?.count ?? 0) >= 32)
        for pid in started {
            let arguments = ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").split(separator: "\0").map(String.init)
            #expect(arguments.contains("--keys"), "pid \(pid): \(arguments)")
            // Every service on PostgreSQL; the password on no command line.
            #expect(arguments.contains("--database"), "pid \(pid): \(arguments)")
            #expect(password.map { !arguments.joined(separator: " ").contains($0) } == true)
        }

        // The services speak CURVE: the admin's certificate, each service's public key (every instance uses its service's pair).
        let keys = KeyDirectory(directory.appendingPathComponent("keys").path)
        let admin = try keys.adminCertificate()
        let context = try Context()
        func client(_ service: String, port: Int) throws -> WireClient {
            try WireClient("tcp://127.0.0.1:\(port)", context: context, credentials: CurveCredentials(
                publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: try keys.servicePublicKey(service)))
        }
        for (service, port) in [("session-logger", 7301), ("reminder-planner", 7311), ("notifier", 7321), ("noalc-streak", 7331)] {
            let a = try client(service, port: port).ok("health")
            let b = try client(service, port: port + 100).ok("health")
            #expect(a["service"]?.stringValue == service && b["service"]?.stringValue == service)
            let instances = [a["instance"]?.stringValue, b["instance"]?.stringValue]
            #expect(instances[0]?.hasSuffix(":a") == true && instances[1]?.hasSuffix(":b") == true, "\(service): \(instances)")
            #expect(a["logId"]?.stringValue != nil && a["logId"] == b["logId"], "\(service): one log, \(String(describing: a["logId"])) and \(String(describing: b["logId"]))")
        }

        // Written on instance a, read on instance b.
        let session = ClusterSystemTests.session("deploy", minutesAgo: 5)
        let logged = try client("session-logger", port: 7301).ok("session.log", session)
        #expect(logged["duplicate"]?.boolValue == false)
        let listed = try client("session-logger", port: 7401).ok("session.list", [
            "userId": "deploy", "from": Instant.now().adding(seconds: -3600).description, "until": Instant.now().adding(seconds: 60).description])
        guard case .array(let sessions)? = listed["sessions"] else { Issue.record("no sessions: \(listed)"); return }
        #expect(sessions.compactMap { $0["id"]?.stringValue } == [session["id"] as! String], "\(listed)")
        // Both planners serve every user and share the partitions: a reminder put on a is read on b.
        let planners = [try client("reminder-planner", port: 7311), try client("reminder-planner", port: 7411)]
        let reminder = try #require(try planners[0].ok("reminder.put", ["userId": "deploy", "activity": "workout", "time": "09:00"])["id"]?.stringValue)
        #expect(try planners[1].ok("reminder.list", ["userId": "deploy"])["reminders"]?.arrayValue.compactMap { $0["id"]?.stringValue } == [reminder])
        try settledShares(planners, timeout: 10)

        let status = try run(["status"], dataDirectory: directory)
        #expect(status.status == 0, "\(status.output)")
        #expect(status.output.contains("postgres") && status.output.contains("session-logger@b") && status.output.contains("instance b:"),
                "\(status.output)")
        #expect(status.output.contains("reminder-planner@b  running"), "\(status.output)")

        let stopped = try run(["stop"], dataDirectory: directory)
        #expect(stopped.status == 0, "\(stopped.output)")
        #expect(stopped.output.contains("stopped postgres"), "\(stopped.output)")
        // pg_ctl returns once the postmaster removed its pid file, a moment before it exits.
        try waitUntil(timeout: 5, interval: 0.1, "every service and PostgreSQL gone") { (started + [postmaster]).allSatisfy { !ProcessTable.running($0) } }
        // Nor any other process of ours: every one names the data directory on its command line.
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init).filter { pid in
            ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").contains(directory.path)
        }
        #expect(leftovers.isEmpty, "still running: \(leftovers)")
        #expect(try run(["status"], dataDirectory: directory).status == 3)
    }
}
