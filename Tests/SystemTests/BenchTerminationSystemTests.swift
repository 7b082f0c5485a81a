import Foundation
import Testing

/// `bench` as a real process (Spawn's `endChildrenOnTerminationSignals`, beside ChildProcessTests in
/// SpawnTests: this one needs the built executables).
@Suite struct BenchTerminationSystemTests {
    /// A `kill` of `bench` ends the services it started: a signal's default action runs no `deinit`,
    /// which would leave them running.
    @Test func aKilledBenchEndsTheServicesItStarted() throws {
        // Its scratch files under ours: killed, bench removes none.
        let scratch = ScratchDirectory("lht-killed-bench")
        let bench = try ChildProcess(BuildProducts.executable("bench").path, ["soak", "--minutes", "1"],
                                     environment: ProcessInfo.processInfo.environment.merging(["TMPDIR": scratch.url.path]) { $1 },
                                     stdout: .null, stderr: .null)
        defer { bench.kill() }
        var services: [pid_t] = []
        try waitUntil(timeout: 60, interval: 0.1, "the soak's four services started") {
            services = ProcessTable.children(of: bench.pid)
            return services.count >= 4 || !bench.isRunning
        }
        try #require(services.count == 4, "the soak's four services started")
        bench.terminate()
        #expect(bench.wait() == .signalled(SIGTERM))
        // Ended before bench did (a zombie until init reaps it), not reparented and running.
        for pid in services { #expect(!ProcessTable.running(pid), "service \(pid) still runs") }
    }
}
