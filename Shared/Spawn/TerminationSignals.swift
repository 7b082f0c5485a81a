import Glibc

extension ChildProcess {
    /// The signals `endChildrenOnTerminationSignals` handles: a `kill`, a ^C, a closed terminal.
    static let terminationSignals = [SIGTERM, SIGINT, SIGHUP]
    /// How long the children have to end after SIGTERM before they get SIGKILL.
    static let terminationGraceSeconds: UInt32 = 5

    /// For a program whose children must not outlive it however it is stopped (`bench`: a `kill`
    /// left its services and redis-server running, since a signal's default action runs no
    /// `deinit`). From now on each of `terminationSignals` ends every child not yet reaped — SIGTERM
    /// first, so that each stops cleanly and ends its own children; SIGKILL for any still running
    /// after `terminationGraceSeconds` — and then this process, as the signal would have ended it.
    /// Call it once, early. A child asked for after the signal is not started (`SpawnError`, ECANCELED).
    public static func endChildrenOnTerminationSignals() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        signalPipe = ends[1]
        signalReader = ends[0]
        // A handler may only do what is async-signal-safe: it hands the signal to a thread.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            var number = UInt8(truncatingIfNeeded: signal)
            _ = write(signalPipe, &number, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        for signal in terminationSignals { sigaction(signal, &action, nil) }
        // A thread that would exit meanwhile (a benchmark failing as its services stop) waits for the
        // signal's end instead.
        atexit {
            guard unreapedChildren.withLock({ $0.ending }) else { return }
            while true { pause() }
        }
        var thread = pthread_t()
        pthread_create(&thread, nil, { _ in
            endChildrenThenSelf()
            return nil
        }, nil)
    }
}

// Globals, since a signal handler and a C thread body capture nothing. Set once, before either runs.
nonisolated(unsafe) private var signalPipe: Int32 = -1
nonisolated(unsafe) private var signalReader: Int32 = -1

private func endChildrenThenSelf() -> Never {
    var number: UInt8 = 0
    while read(signalReader, &number, 1) != 1 {}
    let signal = Int32(number)
    let children = unreapedChildren.withLock { children in
        children.ending = true
        return Array(children.pids)
    }
    for pid in children { kill(pid, SIGTERM) }
    // Looked at without reaping: each child's ChildProcess reaps it, if this process lives that long.
    func running(_ pid: pid_t) -> Bool {
        var info = siginfo_t()
        return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_signo != SIGCHLD
    }
    var waited: UInt32 = 0
    while children.contains(where: running), waited < ChildProcess.terminationGraceSeconds * 50 {
        usleep(20_000)
        waited += 1
    }
    for pid in children where running(pid) { kill(pid, SIGKILL) }
    Glibc.signal(signal, SIG_DFL)
    raise(signal)
    _exit(128 + signal)
}
