import Foundation
import LHTClient
import ZeroMQ

/// The requests in flight to one service, all on one DEALER, each sent as `[id, "", frame]`: the
/// service sends every frame before the body back with its reply (its routing envelope), so a reply
/// finds its request by the id whatever the order. Owned by one thread (`UpstreamPool`).
///
/// The rules are `ServiceClient.exchange`'s (Lazy Pirate over `Instances`, `Resend`): each try has
/// its share of the deadline; when one runs out on an instance that has answered nothing since it
/// left, the connection is closed, so nothing unsent leaves later, and the instance is marked
/// unanswered. Every request still on that connection is then unanswered too: it goes to the next
/// instance when tries are left and `Resend` allows, else it gets nil. An instance that answered
/// others meanwhile is alive and only slow on that one (a quick action waiting on its logger): the
/// request waits there for the rest of its whole timeout, and the others keep their connection.
final class UpstreamLane {
    struct Job {
        let frame: Data
        let timeoutMilliseconds: Int
        let answer: @Sendable (Data?) -> Void
    }

    private struct InFlight {
        let job: Job
        let attempt: Int
        var deadline: UInt64
        /// When this try left, and when the first one did.
        let sent: UInt64, started: UInt64
        /// The generation of the connection it was handed to; nil when none could be made.
        let connection: Int?
        /// Whether the socket took it (else it cannot have left).
        let queued: Bool
    }

    private let context: Context
    private let credentials: CurveCredentials?
    private var instances: Instances
    private(set) var connection: UpstreamConnection?
    private var generation = 0
    private var inFlight: [UInt64: InFlight] = [:]
    private var nextID: UInt64 = 0
    /// When the current connection last gave a reply.
    private var lastReply: UInt64 = 0

    init(context: Context, endpoints: [String], credentials: CurveCredentials?) {
        self.context = context
        self.credentials = credentials
        instances = Instances(endpoints)
    }

    /// Sends `job` (its `attempt`th try) to the current instance. One the socket does not take
    /// runs out at once, as `ServiceClient` treats a failed send like a timeout.
    func send(_ job: Job, attempt: Int = 1, started: UInt64? = nil, now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        let id = nextID
        nextID &+= 1
        let perTry = UInt64(max(100, job.timeoutMilliseconds / max(1, instances.endpoints.count)))
        guard let connection = try? connected() else {
            inFlight[id] = InFlight(job: job, attempt: attempt, deadline: now, sent: now, started: started ?? now, connection: nil, queued: false)
            return
        }
        var tag = id.littleEndian
        let queued = (try? connection.socket.send(multipart: [Data(bytes: &tag, count: 8), Data(), job.frame], dontWait: true)) ?? false
        inFlight[id] = InFlight(job: job, attempt: attempt, deadline: queued ? now + perTry * 1_000_000 : now, sent: now,
                                started: started ?? now, connection: connection.generation, queued: queued)
    }

    private func connected() throws -> UpstreamConnection {
        if let connection { return connection }
        generation += 1
        let made = try UpstreamConnection(context: context, endpoint: instances.endpoint, instance: instances.current,
                                          generation: generation, credentials: credentials)
        connection = made
        lastReply = 0
        return made
    }

    /// Answers every reply waiting on the socket.
    func receiveReplies() {
        guard let socket = connection?.socket else { return }
        while let frames = try? socket.receiveMultipart(dontWait: true) {
            lastReply = DispatchTime.now().uptimeNanoseconds
            guard frames.count >= 2, frames[0].count == 8, let body = frames.last else { continue }
            let id = frames[0].withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            inFlight.removeValue(forKey: id)?.job.answer(body)
        }
    }

    /// Milliseconds until the next try runs out (-1: none in flight).
    func millisecondsToNextDeadline(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int {
        guard let next = inFlight.values.lazy.map(\.deadline).min() else { return -1 }
        return next <= now ? 0 : Int((next - now + 999_999) / 1_000_000)
    }

    /// Handles the tries that ran out by `now`, and every other request on their connection.
    func expire(now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        let current = connection?.generation
        var due: [InFlight] = []
        for (id, request) in inFlight where request.deadline <= now {
            guard request.queued, request.connection == current, lastReply > request.sent else { due.append(request); continue }
            let end = request.started + UInt64(request.job.timeoutMilliseconds) * 1_000_000
            if now < end {
                inFlight[id]?.deadline = end
            } else {
                inFlight[id] = nil
                request.job.answer(nil)
            }
        }
        guard !due.isEmpty else { return }
        let dropConnection = current != nil && due.contains { $0.connection == current }
        var reached = false
        if dropConnection, let connection {
            reached = connection.wasEverConnected()
            connection.close()
            self.connection = nil
            instances.unanswered(at: connection.instance)
        } else if due.contains(where: { $0.connection == nil }) {
            instances.unanswered(at: instances.current)
        }
        let unanswered = inFlight.filter { $0.value.connection == nil || (dropConnection && $0.value.connection == current) }
            .sorted { $0.key < $1.key }
        for (id, request) in unanswered {
            inFlight[id] = nil
            if request.queued && reached, Resend.of(requestFrame: request.job.frame) == .onlyIfNeverSent {
                request.job.answer(nil)
            } else if request.attempt < instances.tries(1) {
                send(request.job, attempt: request.attempt + 1, started: request.started, now: now)
            } else {
                request.job.answer(nil)
            }
        }
    }

    /// Every request in flight gets nil, and the connection closes.
    func stop() {
        let all = inFlight.values
        inFlight = [:]
        connection?.close()
        connection = nil
        for request in all { request.job.answer(nil) }
    }
}
