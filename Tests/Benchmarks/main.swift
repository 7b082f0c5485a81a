import Foundation
@preconcurrency import SwiftGlibc  // `stdout`, a C global, for setvbuf
import Spawn
import SQLiteStorage
import Storage
import TestSupport

// `bench <name> [arguments]`: one entry per benchmark; each parses its own arguments.
// `bench all [--quick] [--table FILE]` runs every benchmark but the long-running ones (AllBenchmarks).
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
        try AllBenchmarks.run(Array(arguments.dropFirst()))
    } else {
        setvbuf(stdout, nil, _IOLBF, 0)  // line by line, also into the file `bench all` follows
        try benchmarks[name]!(Array(arguments.dropFirst()))
        print(String(format: "peak resident memory of bench %@: %.0f MB", name, ProcessStatus.megabytes("VmHWM")))
    }
} catch {
    FileHandle.standardError.write(Data("bench \(name): \(error)\n".utf8))
    exit(1)
}
