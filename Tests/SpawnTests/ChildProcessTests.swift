import Foundation
import Spawn
import Synchronization
import Testing
import TestSupport

/// ChildProcess (Shared/Spawn), which starts and reaps every process of these tests: a kill is over
/// when it returns, every child is reaped exactly once, and a child starts clean (its own
/// environment, no blocked signals, no inherited descriptors).
@Suite struct ChildProcessTests {
    /// Whether `pid` is still in the process table (a zombie is: only reaping removes it).
    static func exists(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 || errno != ESRCH }

    @Test func killEndsAndReapsARunningChild() throws {
        let child = try CapturedProcess("/bin/sh", ["-c", "echo ready; sleep 30"])
        try child.waitForOutput("ready\n")
        #expect(child.process.isRunning)
        let started = Date()
        #expect(child.process.kill() == .signalled(SIGKILL))
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(!Self.exists(child.process.pid), "not reaped")
        #expect(!child.process.isRunning)
        #expect(child.process.wait() == .signalled(SIGKILL), "the same termination again, without a second waitpid")
    }

    @Test func exitStatusesAndSignals() throws {
        let exited = try ChildProcess("/bin/sh", ["-c", "exit 3"])
        #expect(exited.wait() == .exited(3))
        #expect(exited.wait().status == 3)
        let signalled = try ChildProcess("/bin/sh", ["-c", "kill -TERM $$; sleep 5"])
        #expect(signalled.wait() == .signalled(SIGTERM))
        #expect(!Self.exists(signalled.pid))
        #expect(try ChildProcess("/bin/true").wait() == .exited(0))
        #expect(throws: SpawnError.self) { try ChildProcess("/nonexistent/program") }
    }

    @Test func aChildThatExitsByItselfIsReapedByPolling() throws {
        let child = try ChildProcess("/bin/sh", ["-c", "sleep 0.2; exit 4"])
        #expect(child.poll() == nil)
        #expect(child.poll(forUpTo: 10) == .exited(4))
        #expect(!Self.exists(child.pid))
    }

    @Test func deinitKillsAndReaps() throws {
        var child: ChildProcess? = try ChildProcess("/bin/sleep", ["30"])
        let pid = child!.pid
        #expect(Self.exists(pid))
        child = nil
        #expect(!Self.exists(pid))
    }

    @Test func environmentIsExactlyTheOneGiven() throws {
        let given = try CapturedProcess("/bin/sh", ["-c", "printf '%s|%s' \"$LHT_PROBE\" \"${HOME-unset}\""],
                                        environment: ["LHT_PROBE": "a b=c"]).finish()
        #expect(given.stdout == "a b=c|unset")
        let inherited = try CapturedProcess("/bin/sh", ["-c", "printf '%s' \"$PATH\""]).finish()
        #expect(inherited.stdout == ProcessInfo.processInfo.environment["PATH"])
    }

    @Test func standardStreamsFromAndToFiles() throws {
        let directory = ScratchDirectory("lht-spawn")
        let input = directory.url.appendingPathComponent("in"), output = directory.url.appendingPathComponent("out")
        try "from a file\n".write(to: input, atomically: true, encoding: .utf8)
        // stdout and stderr to one file, appended.
        let child = try ChildProcess("/bin/sh", ["-c", "cat; echo to-stderr >&2"], stdin: .file(input.path),
                                     stdout: .file(output.path), stderr: .file(output.path))
        #expect(child.wait() == .exited(0))
        #expect(try String(contentsOf: output, encoding: .utf8) == "from a file\nto-stderr\n")
        // Made by the child, readable by this user only.
        #expect(try FileManager.default.attributesOfItem(atPath: output.path)[.posixPermissions] as? Int == 0o600)
    }

    /// A test thread (or libdispatch's) may block SIGTERM, and a child would inherit that mask.
    @Test func aChildStartsWithNoSignalBlocked() throws {
        var term = sigset_t(), previous = sigset_t()
        sigemptyset(&term)
        sigaddset(&term, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &term, &previous)
        let child = try ChildProcess("/bin/sleep", ["30"])
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        child.terminate()
        #expect(child.wait() == .signalled(SIGTERM))
    }

    @Test func noDescriptorButTheStandardOnesIsInherited() throws {
        let descriptor = open("/dev/null", O_RDONLY)  // without O_CLOEXEC
        defer { close(descriptor) }
        let probe = try ChildProcess("/bin/sh", ["-c", "test -e /proc/$$/fd/\(descriptor)"])
        #expect(probe.wait() == .exited(1))
        #expect(try ChildProcess("/bin/sh", ["-c", "test -e /proc/$$/fd/2"]).wait() == .exited(0))
    }

    @Test func processGroupIsTheParentsUnlessAskedOtherwise() throws {
        let shared = try ChildProcess("/bin/sleep", ["30"])
        #expect(getpgid(shared.pid) == getpgrp())
        let own = try ChildProcess("/bin/sleep", ["30"], ownProcessGroup: true)
        #expect(getpgid(own.pid) == own.pid)
    }

    /// Waiting and polling from several threads at once reaps once (a second waitpid would trap).
    @Test func concurrentWaitsReapOnce() throws {
        for _ in 0..<20 {
            let child = try ChildProcess("/bin/sh", ["-c", "exit 7"])
            let seen = Mutex<[ChildProcess.Termination?]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                let termination = index.isMultiple(of: 2) ? child.wait() : child.poll()
                seen.withLock { $0.append(termination) }
            }
            #expect(seen.withLock { $0 }.allSatisfy { $0 == nil || $0 == .exited(7) })
            #expect(child.wait() == .exited(7))
        }
    }
}
