import Foundation
import Testing

/// `deploy/lht-services` against the built executables: it starts the whole system once, a second
/// start starts nothing, and stop leaves no process behind. It uses the default loopback ports.
@Suite struct DeployScriptTests {
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

    func pids(in directory: URL) -> [Int32] {
        ["session-logger", "reminder-planner", "notifier", "noalc-streak"].compactMap { service in
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
        #expect(second.output.components(separatedBy: "(already running)").count - 1 == 4)
        #expect(pids(in: directory) == started)
        #expect(try run(["status"], dataDirectory: directory).status == 0)

        let stopped = try run(["stop"], dataDirectory: directory)
        #expect(stopped.status == 0, "\(stopped.output)")
        #expect(started.allSatisfy { kill($0, 0) != 0 }, "a service is still running")
        #expect(try run(["status"], dataDirectory: directory).status == 3)
    }
}
