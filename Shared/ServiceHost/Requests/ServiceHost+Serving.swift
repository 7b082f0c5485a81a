import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

extension ServiceHost {
    /// Requests read in one turn share one transaction: group commit, one fsync for the batch.
    /// A batch is bounded in count and in bytes, so memory follows the limits, not the clients.
    public static let batchLimit = 512
    public static let batchBytes = 8 << 20
    /// PROTOCOL "Requests and replies": a larger request frame is `invalid_argument`, answered from its
    /// size alone; libzmq closes the connection of a peer whose frame is over `largestFrame`.
    public static let largestRequest = 1 << 20
    public static let largestFrame = 4 << 20

    /// Reads every request waiting on the api (up to the batch limit); once they should run
    /// (`GroupCommit`), runs them in one transaction, then replies to each in order.
    func serveAPI() throws {
        guard try gatheredEnough() else { return }
        // Side by side rather than as pairs, which `map`, `zip` and the reply closures each copied
        // whole, a retain per member.
        var envelopes: [[Data]] = [], requests: [IncomingRequest] = []
        var bytes = 0
        while requests.count < Self.batchLimit, bytes < Self.batchBytes, let (envelope, request) = takeHeld() {
            bytes += request.frame.count
            envelopes.append(envelope)
            requests.append(request)
        }
        groupCommit.ran(at: DispatchTime.now().uptimeNanoseconds)
        guard !requests.isEmpty else { return }
        // A deferred request keeps its envelope until its answer comes (Deferred.swift). A reply
        // leaves once every commit before it is on disk (CommitSync): it may tell of any of them.
        let ordered = OrderedReplies(count: requests.count) { [unowned self] index, frame in sendReply(frame, to: envelopes[index]) }
        let replies = process(requests, allowedOps: nil, later: { [unowned self] index in
            let envelope = envelopes[index]
            return { [unowned self] reply in commits.afterDurable { [unowned self] in sendReply(reply, to: envelope) } }
        }, answerRead: { index in
            ordered.expect(index)
            return { ordered.fill(index, $0, expected: true) }
        })
        for index in replies.indices {
            guard let reply = replies[index] else { continue }
            if reply.atOnce { sendReply(reply.outcome.frame, to: envelopes[index]) } else { ordered.fill(index, reply.outcome.frame) }
        }
        commits.afterDurable { ordered.becameDurable() }
    }

    /// Reads what waits on the api into `held`; true once the held requests should run (`GroupCommit`).
    private func gatheredEnough() throws -> Bool {
        while held.count < Self.batchLimit, heldBytes < Self.batchBytes, let message = try receiveAPIRequest() { hold(message) }
        apiLookedAt = DispatchTime.now().uptimeNanoseconds
        return !isServing || held.count >= Self.batchLimit || heldBytes >= Self.batchBytes
            || groupCommit.nanosecondsLeft(at: DispatchTime.now().uptimeNanoseconds) == 0
    }

    private func hold(_ message: (envelope: [Data], request: IncomingRequest)) {
        held.append(message)
        heldBytes += message.request.frame.count
    }

    /// A request from the api socket, unanswered for `groupCommit` until `sendReply`.
    private func receiveAPIRequest() throws -> (envelope: [Data], request: IncomingRequest)? {
        let message = try receiveRequest(from: api)
        if let message { groupCommit.arrived(at: DispatchTime.now().uptimeNanoseconds, from: message.envelope.first ?? Data(), writes: writes(message.request)) }
        return message
    }

    /// Whether `request` runs in a batch's transaction, whose sync it may share: only such requests
    /// wait for others to join their turn (`GroupCommit`). One placed outside it, or read behind the
    /// log, syncs nothing, and waiting would only delay it.
    private func writes(_ request: IncomingRequest) -> Bool {
        guard case .success(let head) = request.head else { return false }
        return operations[head.op]?.placement == .batched
    }

    /// The oldest held request. Not the socket's next: `gatheredEnough` has just read it empty (or
    /// to the batch's limits), and reading it again on every turn only costs a receive that fails.
    private func takeHeld() -> (envelope: [Data], request: IncomingRequest)? {
        guard let first = held.popFirst() else { return nil }
        heldBytes -= first.request.frame.count
        return first
    }

    /// Answers `health` requests on the api until `isDone`, and holds the others for the next turn
    /// (`held`, bounded as a batch is: past that, requests and `health` too wait in the socket).
    /// For a loop that must wait for another thread without going silent. A `health` reply may
    /// overtake the replies to a client's earlier requests, as any reply answered later may.
    func answerHealthOnly(until isDone: () -> Bool) {
        while !isDone() {
            // Replies whose commits reached the disk meanwhile need not wait for `isDone`.
            commits.runDurable()
            guard held.count < Self.batchLimit, heldBytes < Self.batchBytes else {
                Thread.sleep(forTimeInterval: 0.002)
                continue
            }
            guard (try? Poller.readable([api], timeoutMilliseconds: 2))?[0] == true else { continue }
            answerWaitingHealth()
        }
    }

    /// Work on the loop thread that takes many steps in one turn (a backlog of upstream events, a
    /// takeover, a burst of decisions) calls this between its steps: once the api has gone
    /// unlooked-at for `healthAnswerNanoseconds`, the `health` requests waiting are answered and the
    /// others held for the next turn, as while the loop waits (`answerHealthOnly`). So a monitor
    /// or a client choosing an instance by `health` is not misled by one long turn. Safe inside a
    /// write transaction: `health` reads nothing of it.
    /// `now`: the caller's clock reading, where it has one (uptime nanoseconds).
    public func answerHealthIfDue(now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        guard isServing, now >= apiLookedAt + Self.healthAnswerNanoseconds else { return }
        commits.runDurable()
        answerWaitingHealth()
    }

    /// How long `health` may wait on work in steps: well under the 100 ms a monitor allows it.
    static let healthAnswerNanoseconds: UInt64 = 20_000_000

    /// Reads what waits on the api (up to the batch's limits): answers `health`, holds the rest.
    private func answerWaitingHealth() {
        while held.count < Self.batchLimit, heldBytes < Self.batchBytes, let message = try? receiveAPIRequest() {
            guard (try? message.request.head.get())?.op == Ops.health.name else {
                hold(message)
                continue
            }
            sendReply(process([message.request])[0], to: message.envelope)
        }
        apiLookedAt = DispatchTime.now().uptimeNanoseconds
    }

    /// Everything before the body is the routing envelope (identity, and the delimiter if any).
    /// One reply that cannot go (its client vanished) must not cost the others theirs.
    private func sendReply(_ reply: Data, to envelope: [Data]) {
        groupCommit.answered(envelope.first ?? Data(), at: DispatchTime.now().uptimeNanoseconds)
        do {
            try api.send(multipart: envelope, then: reply, dontWait: true)
        } catch {
            logger.warning("reply not sent", metadata: ["error": "\(error)"])
        }
    }
}
