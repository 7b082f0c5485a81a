// Child processes started with posix_spawn and reaped with waitpid, synchronously: no dispatch
// sources, no run loop, no helper thread.
//
// Why not Foundation.Process: it watches children through libdispatch and a run loop, and a test
// process crashed in libdispatch's manager thread (SIGSEGV in _dispatch_event_loop_drain) while
// ServiceProcess.kill() waited in waitUntilExit() from a deinit.
// Why not swift-subprocess 1.0.2: its API is async and ties a child's life to a closure's scope,
// which fits neither a service that lives across a synchronous test nor a kill from a deinit (a
// deinit cannot await); and on Linux it watches children from a process-wide monitor thread, the
// same kind of machinery again.
// Here stopping a child is kill(pid, SIGKILL) and a blocking waitpid(pid): deterministic, and safe
// in a deinit.
import Glibc
import Synchronization

/// One child process. It never outlives its handle: a child still running at `deinit` is killed
/// and reaped, so no test or command leaves a zombie or a stray service behind.
public final class ChildProcess: Sendable {
    /// How a child ended. `status` is the exit code or the signal's number (as Foundation.Process's terminationStatus).
    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)

        public var status: Int32 {
            switch self {
            case .exited(let code), .signalled(let code): code
            }
        }
    }

    /// Where a standard stream goes. The child opens files itself (appending; created if missing,
    /// 0600, since what a service prints may name users), so the parent holds no descriptor that
    /// another thread's child could inherit.
    public enum Stream: Sendable {
        case inherit
        case null
        case file(String)
    }

    public let pid: pid_t
    /// Set once, when the child is reaped; the pid stays ours (a zombie at worst) until then.
    private let termination = Mutex<Termination?>(nil)

    /// Starts `executable` (a path: no PATH search) with no signal blocked or ignored and no descriptor
    /// but 0-2 inherited. `environment` nil: this process's. `ownProcessGroup`: a ^C at the terminal
    /// (SIGINT to the foreground group) reaches the parent only, which decides what the child gets;
    /// otherwise the child shares the parent's group, and with it the ^C.
    public init(_ executable: String, _ arguments: [String] = [], environment: [String: String]? = nil,
                stdin: Stream = .null, stdout: Stream = .inherit, stderr: Stream = .inherit,
                ownProcessGroup: Bool = false) throws(SpawnError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, stream) in [(STDIN_FILENO, stdin), (STDOUT_FILENO, stdout), (STDERR_FILENO, stderr)] {
            let flags = descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND
            switch stream {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", flags, 0)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, 0o600)
            }
        }
        closeInheritedDescriptors(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The spawning thread's mask is inherited, and test threads and libdispatch's block SIGTERM.
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        let group = ownProcessGroup ? POSIX_SPAWN_SETPGROUP : 0
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | group))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { (argv + (envp ?? [])).forEach { free($0) } }
        // Started and recorded under the lock, so that `endChildrenOnTerminationSignals` misses none.
        pid = try unreapedChildren.withLock { (children) throws(SpawnError) -> pid_t in
            guard !children.ending else { throw SpawnError(executable: executable, errno: ECANCELED) }
            var pid: pid_t = 0
            let error = envp.map { posix_spawn(&pid, executable, &actions, &attributes, argv, $0) }
                ?? posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
            guard error == 0 else { throw SpawnError(executable: executable, errno: error) }
            children.pids.insert(pid)
            return pid
        }
    }

    /// Sends `signal` unless the child has been reaped (its pid may then be someone else's).
    public func signal(_ signal: Int32) {
        termination.withLock { if $0 == nil { _ = Glibc.kill(pid, signal) } }
    }

    /// SIGTERM: the child may finish what it is doing.
    public func terminate() { signal(SIGTERM) }

    /// SIGKILL and the exit.
    @discardableResult
    public func kill() -> Termination {
        signal(SIGKILL)
        return wait()
    }

    /// The termination if the child has ended (reaping it), nil while it runs.
    public func poll() -> Termination? {
        termination.withLock { state in
            if let state { return state }
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(pid, &status, WNOHANG) } while reaped == -1 && errno == EINTR
            precondition(reaped != -1, "waitpid(\(pid)): errno \(errno); did someone else reap our child?")
            guard reaped == pid else { return nil }
            unreapedChildren.withLock { _ = $0.pids.remove(pid) }
            // Not stopped or continued: no WUNTRACED or WCONTINUED was asked for.
            state = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
            return state
        }
    }

    public var isRunning: Bool { poll() == nil }

    /// The termination once the child has ended, looking every 5 ms for up to `seconds`; nil if it
    /// still runs then.
    public func poll(forUpTo seconds: Double) -> Termination? {
        func now() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let deadline = now() + seconds
        var ended = poll()
        while ended == nil, now() < deadline {
            usleep(5_000)
            ended = poll()
        }
        return ended
    }

    /// Blocks until the child has ended, and reaps it.
    @discardableResult
    public func wait() -> Termination {
        if let termination = poll() { return termination }
        // WNOWAIT leaves the zombie, so the lock is not held while blocking and poll() reaps exactly once.
        // ECHILD: another thread's poll() reaped it meanwhile.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 {
            precondition(errno == EINTR || errno == ECHILD, "waitid(\(pid)): errno \(errno)")
            if errno == ECHILD { break }
        }
        return poll()!
    }

    deinit {
        if poll() == nil { kill() }
    }
}

/// Every child started and not yet reaped, by pid, and whether this process is ending them all
/// (`endChildrenOnTerminationSignals`): then it starts no more.
let unreapedChildren = Mutex<(pids: Set<pid_t>, ending: Bool)>(([], false))

public struct SpawnError: Error, CustomStringConvertible {
    public let executable: String
    public let errno: Int32
    public var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }
}

/// Closes every descriptor from 3 up in the child, as Foundation.Process did (Linux has no
/// POSIX_SPAWN_CLOEXEC_DEFAULT). glibc ≥ 2.34 has posix_spawn_file_actions_addclosefrom_np, but
/// Swift's Glibc module leaves it out (it needs _GNU_SOURCE), hence dlsym; older glibc: one close
/// per descriptor open now.
private func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    if let closeFrom = addCloseFrom {
        _ = closeFrom(&actions, 3)
        return
    }
    guard let directory = opendir("/proc/self/fd") else { return }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if let descriptor = Int32(name), descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
    }
}

private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
private let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map { unsafeBitCast($0, to: AddCloseFrom.self) }
