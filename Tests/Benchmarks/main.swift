import Foundation

// `bench <name> [arguments]`: one entry per benchmark; each parses its own arguments.
let benchmarks: [String: ([String]) throws -> Void] = [
    "zmq-pubsub": ZeroMQPubSub.run,
    "session-log": SessionLogBenchmark.run,
    "curve": CurveBenchmark.run,
    "streak": StreakBenchmark.run,
    "planner": PlannerBenchmark.run,
]

let arguments = CommandLine.arguments.dropFirst()
guard let name = arguments.first, let benchmark = benchmarks[name] else {
    let names = benchmarks.keys.sorted().joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: bench <benchmark> [arguments]; benchmarks: \(names)\n".utf8))
    exit(2)
}
do {
    try benchmark(Array(arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("bench \(name): \(error)\n".utf8))
    exit(1)
}
