import CZeroMQ
import Foundation
import Synchronization

/// A ZeroMQ context. libzmq documents contexts as thread-safe, unlike sockets.
public final class Context: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    /// `inproc://label-n`, with an `n` no earlier call in this process had. Not an object's address:
    /// an address is reused as soon as its object is freed, while libzmq releases an inproc name only
    /// once its reaper thread has destroyed the closed socket, so a new object's socket could find
    /// the name still bound (EADDRINUSE).
    public static func uniqueInprocEndpoint(_ label: String) -> String {
        "inproc://\(label)-\(inprocSerial.add(1, ordering: .relaxed).newValue)"
    }

    private static let inprocSerial = Atomic<UInt64>(0)

    public init(ioThreads: Int32 = 1) throws {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last() }
        self.handle = handle
        zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads)
    }

    /// Makes blocking calls on this context's sockets return ETERM, from any thread.
    public func shutdown() { zmq_ctx_shutdown(handle) }

    private let terminating = Atomic<Bool>(false)

    /// For a process about to exit: shuts the context down and terminates it on another thread,
    /// which waits until every socket is closed and the closed ones have sent what they hold (up to
    /// their LINGER). Returns whether that finished within `milliseconds`; either way the context
    /// is not terminated again when released.
    public func terminate(waitingAtMost milliseconds: Int) -> Bool {
        guard !terminating.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        let done = DispatchSemaphore(value: 0)
        let handle = UInt(bitPattern: self.handle)
        Thread.detachNewThread {
            let pointer = UnsafeMutableRawPointer(bitPattern: handle)
            zmq_ctx_shutdown(pointer)
            while zmq_ctx_term(pointer) != 0 && zmq_errno() == EINTR {}
            done.signal()
        }
        return done.wait(timeout: .now() + .milliseconds(milliseconds)) == .success
    }

    deinit {
        // Every socket holds a strong reference to its context, so none is open here.
        guard !terminating.load(ordering: .acquiring) else { return }
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }
}
