import Foundation
// ChildProcess, for every target that uses TestSupport.
@_exported import Spawn

/// A child's exit status (or signal number) and everything it printed.
public struct ProcessRun: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
    public let seconds: TimeInterval
}

/// A child process whose standard output and error go to files of its own, read as they grow: no
/// pipes, so no reader threads, no child blocked on a full pipe, and every byte is there once the
/// child has been reaped. Killed and reaped, if still running, when this object goes away.
public final class CapturedProcess: Sendable {
    public let process: ChildProcess
    private let files: ScratchDirectory
    private let started = Date()
    private let name: String

    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                stdin: ChildProcess.Stream = .null) throws {
        files = ScratchDirectory("lht-child")
        name = "\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.prefix(3).joined(separator: " "))"
        process = try ChildProcess(executable, arguments, environment: environment, stdin: stdin,
                                   stdout: .file(files.url.appendingPathComponent("stdout").path),
                                   stderr: .file(files.url.appendingPathComponent("stderr").path))
    }

    public var output: String { read("stdout") }
    public var errors: String { read("stderr") }

    private func read(_ file: String) -> String {
        (try? String(contentsOf: files.url.appendingPathComponent(file), encoding: .utf8)) ?? ""
    }

    public func waitForOutput(_ text: String, timeout: TimeInterval = 15) throws { try wait(for: text, in: { output }, timeout: timeout) }
    public func waitForError(_ text: String, timeout: TimeInterval = 15) throws { try wait(for: text, in: { errors }, timeout: timeout) }

    private func wait(for text: String, in printed: () -> String, timeout: TimeInterval) throws {
        try waitUntil(timeout: timeout, interval: 0.02, "\(name) printing \"\(text)\" (it printed: \(output) \(errors))") {
            if printed().contains(text) { return true }
            // Read once more after the exit: the text may have come just before it.
            guard process.isRunning || printed().contains(text) else { throw HarnessError("\(name) exited without printing \"\(text)\": \(output) \(errors)") }
            return false
        }
    }

    /// Waits for the exit (killing the child after `timeout`) and returns what it printed.
    public func finish(timeout: TimeInterval = 40) throws -> ProcessRun {
        guard let ended = process.poll(forUpTo: timeout) else {
            process.kill()
            throw HarnessError("\(name) did not exit within \(timeout) s: \(output) \(errors)")
        }
        return ProcessRun(status: ended.status, stdout: output, stderr: errors, seconds: Date().timeIntervalSince(started))
    }

    /// SIGTERM, and the exit (SIGKILL after `timeout`): its status or signal number.
    @discardableResult
    public func terminate(timeout: TimeInterval = 10) -> Int32 {
        process.terminate()
        return (process.poll(forUpTo: timeout) ?? process.kill()).status
    }
}
