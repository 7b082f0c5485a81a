import Foundation
import TestSupport

/// `bench all [--quick] [--table FILE]`: every benchmark but the long-running ones, each in a child
/// process of its own (so each one's peak resident memory is its own), then one markdown table of
/// every target line they printed. `--table FILE` writes that table alone to FILE as well.
@MainActor enum AllBenchmarks {
    static func run(_ arguments: [String]) throws {
        var arguments = arguments
        var tableFile: String?
        if let index = arguments.firstIndex(of: "--table") {
            guard arguments.indices.contains(index + 1) else { throw HarnessError("--table needs a file name") }
            tableFile = arguments[index + 1]
            arguments.removeSubrange(index...index + 1)
        }
        let started = Date()
        var failed: [String] = [], targets: [TargetLine] = []
        let scratch = ScratchDirectory("lht-bench")
        for name in benchmarks.keys.sorted() where !longRunning.contains(name) {
            print("\n=== bench \(name) \(arguments.joined(separator: " "))", terminator: "\n")
            fflush(nil)  // the header before the child's own output
            let output = scratch.url.appendingPathComponent("\(name).out").path
            let child = try ChildProcess(URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path, [name] + arguments,
                                         stdout: .file(output))
            var follower = OutputFollower(path: output)
            while child.poll(forUpTo: 0.2) == nil { follower.pass() }
            if child.wait() != .exited(0) { failed.append(name) }
            follower.pass(final: true)
            targets += follower.lines.compactMap { TargetLine(benchmark: name, line: $0) }
        }
        print(String(format: "\nall benchmarks in %.0f s", Date().timeIntervalSince(started))
              + (failed.isEmpty ? "" : "; failed: \(failed.joined(separator: ", "))"))
        let table = TargetLine.markdownTable(targets)
        print("\n" + table, terminator: "")
        if let tableFile { try Data(table.utf8).write(to: URL(fileURLWithPath: tableFile)) }
        if !failed.isEmpty { exit(1) }
    }
}

/// Echoes what a child writes to its output file to this process's standard output as it grows,
/// and keeps the lines, so the child's output stays live while `bench all` reads its target lines.
struct OutputFollower {
    let path: String
    private(set) var lines: [String] = []
    private var offset: UInt64 = 0
    private var partial = Data()

    init(path: String) { self.path = path }

    mutating func pass(final: Bool = false) {
        if let file = FileHandle(forReadingAtPath: path) {
            defer { try? file.close() }
            try? file.seek(toOffset: offset)
            if let data = try? file.readToEnd(), !data.isEmpty {
                offset += UInt64(data.count)
                fflush(nil)  // what this process printed before goes first
                FileHandle.standardOutput.write(data)
                partial.append(data)
            }
        }
        while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
            partial = Data(partial[(newline + 1)...])
        }
        if final, !partial.isEmpty {
            lines.append(String(decoding: partial, as: UTF8.self))
            partial = Data()
        }
    }
}
