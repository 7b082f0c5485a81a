import Foundation
import Spawn
import TestSupport
import ZeroMQ

/// `bench session-log --memory [--records 10000000] [--step 1000000] [--baseline PATH] [--baseline-records 3000000]`
///
/// The session logger's resident memory as its log grows: the built `session-logger` (beside
/// `bench`) takes `--records` distinct sessions from pipelined clients, and its VmRSS and RssAnon
/// (its own memory, which the kernel cannot drop as it may the pages of files it maps) are read after
/// every `--step`, with the throughput of each step. With `--baseline`, another build's executable
/// (today's main, built in release) is measured the same way in the same run, up to `--baseline-records`.
/// Target: RssAnon after the last step ≤ 1.2 × after the first.
extension SessionLogBenchmark {
    static func memory(_ arguments: [String]) throws {
        let records = Options.int(arguments, "--records", 10_000_000)
        let step = Options.int(arguments, "--step", 1_000_000)
        let ours = StreakBenchmark.Child.directory.appendingPathComponent("session-logger").path
        var runs = [("this build", ours, records)]
        if let index = arguments.firstIndex(of: "--baseline"), index + 1 < arguments.count {
            runs.insert(("baseline", arguments[index + 1], Options.int(arguments, "--baseline-records", min(records, 3_000_000))), at: 0)
        }
        print("session-logger resident memory and session.log throughput as the log grows (8 pipelined clients, window 64)")
        fflush(nil)
        var firstRates: [String: Double] = [:]
        for (name, executable, count) in runs {
            let steps = try grow(executable, records: count, step: step)
            for (logged, megabytes, anonymous, rate) in steps {
                print(String(format: "  %-10@ %9d records   VmRSS %7.1f MB   RssAnon %7.1f MB   %7.0f acks/s in the step", name as NSString, logged,
                             megabytes, anonymous, rate))
            }
            guard let first = steps.first, let last = steps.last else { continue }
            firstRates[name] = first.rate
            print(String(format: "  %-10@ RssAnon after %d / after %d = %.2f   %.2f bytes a record between   target ≤ 1.2: %@", name as NSString,
                         last.logged, first.logged, last.anonymous / first.anonymous,
                         (last.anonymous - first.anonymous) * 1_048_576 / Double(max(1, last.logged - first.logged)),
                         last.anonymous / first.anonymous <= 1.2 ? "met" : "NOT met"))
        }
        if let baseline = firstRates["baseline"], let ours = firstRates["this build"] {
            print(String(format: "  session.log throughput of the first step: this build / baseline = %.3f", ours / baseline))
        }
    }

    /// Starts `executable` on a fresh data directory, logs `records` sessions `step` at a time, and
    /// gives what was logged, VmRSS and the step's throughput after each step.
    private static func grow(_ executable: String, records: Int, step: Int) throws -> [(logged: Int, megabytes: Double, anonymous: Double, rate: Double)] {
        let directory = temporaryDirectory("lht-bench-memory")
        let output = directory.appendingPathComponent("stdout")
        var environment = ProcessInfo.processInfo.environment
        environment["LHT_LOG_LEVEL"] = "error"
        let process = try ChildProcess(executable, ["--data-dir", directory.appendingPathComponent("data").path, "--api", "tcp://127.0.0.1:*",
                                                    "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*", "--metrics", "off"],
                                       environment: environment, stdout: .file(output.path))
        defer {
            process.terminate()
            _ = process.wait()
        }
        var api: String?
        let deadline = Date().addingTimeInterval(60)
        while api == nil, Date() < deadline, process.isRunning {
            Thread.sleep(forTimeInterval: 0.02)
            let ready = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            api = ready.split(separator: " ").first { $0.hasPrefix("api=") }.map { String($0.dropFirst(4)) }
        }
        guard let api else { throw BenchError("\(executable) printed no ready line") }
        let context = try Context()
        let clients = 8
        var steps: [(logged: Int, megabytes: Double, anonymous: Double, rate: Double)] = []
        var logged = 0
        while logged < records {
            let count = min(step, records - logged), first = logged
            // Frames made a part at a time, so the bench's own memory stays small; each id distinct.
            var seconds = 0.0
            for part in stride(from: 0, to: count, by: 200_000) {
                let size = min(200_000, count - part)
                let rate = LoadClients.throughput(endpoint: api, context: context, clients: clients, window: 64) { client in
                    (0..<size / clients).map { sessionLog(n: first + part + $0 * clients + client, client: 100 + client) }
                }
                seconds += Double(size) / rate
            }
            logged += count / clients * clients
            let pid = "\(process.pid)"
            steps.append((logged, ProcessStatus.megabytes("VmRSS", of: pid), ProcessStatus.megabytes("RssAnon", of: pid), Double(count) / seconds))
            print(String(format: "    … %d records logged", logged))
            fflush(nil)
        }
        return steps
    }
}
