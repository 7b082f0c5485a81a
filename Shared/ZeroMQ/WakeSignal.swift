import CZeroMQ
import Glibc

/// A wake-up that any thread may give and one loop waits for in `Poller` beside its sockets: a
/// non-blocking eventfd. For a worker thread telling its loop that something is done (a sync, a
/// read's answer).
///
/// It replaced an inproc PAIR per worker: a socket's sends and receives each check its command
/// mailbox (a `poll` and a `getpid`), and so does `Poller` once after each call on it. A signal
/// costs one `read` when it was given.
public final class WakeSignal: @unchecked Sendable {
    let descriptor: Int32

    public init() throws {
        descriptor = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard descriptor >= 0 else { throw ZMQError(code: errno) }
    }

    deinit { close(descriptor) }

    /// Wakes the loop. Any thread.
    public func signal() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, 8)
    }

    /// Takes the signals given so far. The loop's thread, after `Poller` said it was readable.
    public func clear() {
        var count: UInt64 = 0
        _ = read(descriptor, &count, 8)
    }
}
