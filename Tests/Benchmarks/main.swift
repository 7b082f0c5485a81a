import Foundation
import Spawn
import SQLiteStorage
import Storage
import TestSupport

// `bench <name> [arguments]`: one entry per benchmark; each parses its own arguments.
// `bench all [--quick]` runs every benchmark but the long-running ones, each in a child process
// of its own, so each one's peak resident memory is its own.
let benchmarks: [String: ([String]) throws -> Void] = [
    "zmq-pubsub": ZeroMQPubSub.run,
    "session-log": SessionLogBenchmark.run,
    "writes": WritesBenchmark.run,
    "curve": CurveBenchmark.run,
    "streak": StreakBenchmark.run,
    "planner": PlannerBenchmark.run,
    "soak": SoakBenchmark.run,
    "advance": AdvanceBenchmark.run,
    "zones": ZonesBenchmark.run,
    "postgres": PostgresBenchmark.run,
    "gateway": GatewayBenchmark.run,
    "cluster": ClusterBurstBenchmark.run,
]
/// Left out of `bench all`: they run for minutes by design.
let longRunning: Set = ["soak", "advance", "cluster"]

@MainActor func runAll(_ arguments: [String]) throws {
    let started = Date()
    var failed: [String] = []
    for name in benchmarks.keys.sorted() where !longRunning.contains(name) {
        print("\n=== bench \(name) \(arguments.joined(separator: " "))", terminator: "\n")
        fflush(nil)  // the header before the child's own output
        let child = try ChildProcess(URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path, [name] + arguments)
        if child.wait() != .exited(0) { failed.append(name) }
    }
    print(String(format: "\nall benchmarks in %.0f s", Date().timeIntervalSince(started)) + (failed.isEmpty ? "" : "; failed: \(failed.joined(separator: ", "))"))
    if !failed.isEmpty { exit(1) }
}

// A `kill` or ^C ends the services, redis-server and benchmarks this started, not only bench.
ChildProcess.endChildrenOnTerminationSignals()
// As the services' stores do, before the seeding opens a database of its own (it would be too late then).
_ = SQLiteProcess.configured
let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, name == "all" || benchmarks[name] != nil else {
    let names = (benchmarks.keys.sorted() + ["all"]).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: bench <benchmark> [arguments]; benchmarks: \(names)\n".utf8))
    exit(2)
}
do {
    if name == "all" {
        try runAll(Array(arguments.dropFirst()))
    } else {
        try benchmarks[name]!(Array(arguments.dropFirst()))
        print(String(format: "peak resident memory of bench %@: %.0f MB", name, ProcessStatus.megabytes("VmHWM")))
    }
} catch {
    FileHandle.standardError.write(Data("bench \(name): \(error)\n".utf8))
    exit(1)
}
