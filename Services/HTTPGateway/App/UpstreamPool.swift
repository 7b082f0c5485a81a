import Foundation
import LHTClient
import ZeroMQ

/// One service's api as the gateway's HTTP handlers reach it. ZeroMQ sockets must stay on one
/// thread, and NIO's event loops must not block: so one thread owns the service's DEALER
/// (`UpstreamLane`) with every request in flight on it at once, and takes new requests from a
/// queue, woken by a signal beside its socket; a handler awaits its reply without holding an event loop.
final class UpstreamPool: @unchecked Sendable {
    let endpoints: [String]
    private let lock = NSLock()
    private var queue: [UpstreamLane.Job] = []
    private var stopped = false
    private let wake: WakeSignal

    init(context: Context, endpoints: [String], credentials: CurveCredentials?, name: String) throws {
        self.endpoints = endpoints
        wake = try WakeSignal()
        let thread = Thread { [self] in
            serve(UpstreamLane(context: context, endpoints: endpoints, credentials: credentials))
        }
        thread.name = name
        thread.start()
    }

    /// The reply frame to `frame`, or nil when no instance answered within `timeoutMilliseconds`.
    func exchange(_ frame: Data, timeoutMilliseconds: Int) async -> Data? {
        await withCheckedContinuation { continuation in
            send(frame, timeoutMilliseconds: timeoutMilliseconds) { continuation.resume(returning: $0) }
        }
    }

    /// As `exchange`, with the reply (or nil) given to `answer` on the pool's thread.
    func send(_ frame: Data, timeoutMilliseconds: Int, answer: @escaping @Sendable (Data?) -> Void) {
        let job = UpstreamLane.Job(frame: frame, timeoutMilliseconds: timeoutMilliseconds, answer: answer)
        let (wasEmpty, isStopped) = lock.withLock {
            queue.append(job)
            return (queue.count == 1, stopped)
        }
        if isStopped {
            stop()
        } else if wasEmpty {
            // The thread takes the whole queue after each wake-up: one signal per batch is enough.
            wake.signal()
        }
    }

    func stop() {
        let waiting = lock.withLock {
            stopped = true
            defer { queue = [] }
            return queue
        }
        wake.signal()
        for job in waiting { job.answer(nil) }
    }

    /// The thread's loop: send what is queued, answer what came back, handle the tries that ran out.
    private func serve(_ lane: UpstreamLane) {
        while true {
            let sockets = lane.connection.map { [$0.socket] } ?? []
            do {
                let ready = try Poller.readable(sockets, signals: [wake], timeoutMilliseconds: lane.millisecondsToNextDeadline())
                if ready.last == true { wake.clear() }
            } catch {
                // Not expected; the receive below finds what it can, and the loop does not spin.
                Thread.sleep(forTimeInterval: 0.01)
            }
            let (jobs, isStopped) = lock.withLock {
                defer { queue = [] }
                return (queue, stopped)
            }
            if isStopped {
                lane.stop()
                for job in jobs { job.answer(nil) }
                return
            }
            for job in jobs { lane.send(job) }
            lane.receiveReplies()
            lane.expire()
        }
    }
}
