import Foundation
import LHTClient
import ZeroMQ

/// One service's api as the gateway's HTTP handlers reach it. ZeroMQ sockets must stay on one
/// thread, and NIO's event loops must not block: so each of `size` worker threads owns a
/// `ServiceClient` (a DEALER) for its whole life and takes requests from a shared queue; a handler
/// awaits its reply without holding an event loop.
final class UpstreamPool: @unchecked Sendable {
    private struct Job {
        let frame: Data
        let timeoutMilliseconds: Int
        let answer: @Sendable (Data?) -> Void
    }

    let endpoints: [String]
    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var head = 0
    private var stopped = false

    init(context: Context, endpoints: [String], credentials: CurveCredentials?, size: Int, name: String) {
        self.endpoints = endpoints
        for index in 0..<size {
            let thread = Thread { [self] in
                let client = ServiceClient(context: context, endpoints: endpoints, credentials: credentials)
                while let job = next() {
                    // Each instance gets its share of the deadline, so the whole stays within it.
                    let perTry = max(100, job.timeoutMilliseconds / max(1, endpoints.count))
                    job.answer(client.exchange(job.frame, timeoutMilliseconds: perTry))
                }
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !stopped { condition.wait() }
        if stopped { return nil }
        let job = jobs[head]
        head += 1
        if head > 1024 && head * 2 > jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        return job
    }

    /// The reply frame to `frame`, or nil when no instance answered within `timeoutMilliseconds`.
    func exchange(_ frame: Data, timeoutMilliseconds: Int) async -> Data? {
        await withCheckedContinuation { continuation in
            condition.lock()
            jobs.append(Job(frame: frame, timeoutMilliseconds: timeoutMilliseconds) { continuation.resume(returning: $0) })
            condition.signal()
            condition.unlock()
        }
    }

    func stop() {
        condition.lock()
        stopped = true
        let waiting = jobs[head...]
        jobs = []
        head = 0
        condition.broadcast()
        condition.unlock()
        for job in waiting { job.answer(nil) }
    }
}
