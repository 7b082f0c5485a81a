import Foundation
import LHTSchema

// Deferred replies: ops whose answer depends on another service (a quick action that logs at the
// session logger, a clock move that catches up first) must not make the loop wait for it.
//
// A handler registered with `handleDeferred` (placement `.deferred`) gets the decoded request and
// a `DeferredReply`, starts its upstream work (`UpstreamClient.call`, `UpstreamFeed.catchUpInBackground`)
// and returns. The loop keeps the client's routing envelope and goes on serving; when the handler's
// continuation answers — on a later turn, on the loop thread — the reply goes out to that envelope.
// A handler may also answer before it returns (a refusal, an answer needing no upstream): then the
// reply goes out with the rest of its batch, as for any op.
//
// Guarantees: every request gets exactly one reply. A second answer is ignored; a `DeferredReply`
// dropped unanswered answers `internal` itself; when the loop stops, upstream calls in flight end
// as `unavailable`, so their replies still go out. Bounding the wait is the handler's business:
// an `UpstreamClient` call ends after tries × timeout at the latest.

/// The reply to one deferred request, answered once, on the loop thread.
public final class DeferredReply<Output: Encodable> {
    private var send: ((Outcome) -> Void)?
    private let answerOutcome: (() throws -> Data) -> Outcome

    init(outcome: @escaping (() throws -> Data) -> Outcome, send: @escaping (Outcome) -> Void) {
        answerOutcome = outcome
        self.send = send
    }

    /// Whether it was answered already.
    public var isAnswered: Bool { send == nil }

    /// Answers with what `body` returns, or the error it throws (an unexpected one as `internal`).
    public func answer(_ body: () throws -> Output) {
        guard let send else { return }
        self.send = nil
        send(answerOutcome { try WireJSON.encode(body()) })
    }

    public func succeed(_ value: Output) { answer { value } }

    public func fail(_ error: Error) { answer { throw error } }

    deinit {
        send?(.failure(WireError(.internal, "the request was dropped inside the service without an answer")))
    }
}

extension ServiceHost {
    /// Registers an op answered later (placement `.deferred`, outside any transaction; it calls
    /// `write` itself). `handler` must answer `reply` exactly once, now or from a continuation, and
    /// must not block: it starts upstream calls and returns. A throw before answering answers with it.
    public func handleDeferred<Input, Output>(_ op: Op<Input, Output>, owner: ((Input) throws -> UserID?)? = nil,
                                              _ handler: @escaping (Input, DeferredReply<Output>) throws -> Void) {
        register(op, .deferred, owner: owner, .start { [unowned self] input, request, send in
            let reply = DeferredReply<Output>(outcome: { [unowned self] body in outcome(op.name, request, body) }, send: send)
            do {
                try handler(input, reply)
            } catch {
                reply.fail(error)
            }
        })
    }

    /// Starts a deferred request. The outcome comes back through `answered`: at once when it was
    /// answered before `start` returned (returned here too), else later, with `later` to send it.
    func startDeferred(_ operation: any Operation, _ request: IncomingRequest, head: RequestHead,
                       later: ((Outcome) -> Void)?) -> Outcome? {
        final class Slot {
            var returned = false
            var now: Outcome?
        }
        let slot = Slot()
        let body: (Outcome) -> Void = { outcome in
            if slot.returned { later?(outcome) } else { slot.now = outcome }
        }
        let failed = outcome(head.op, request) {
            try operation.decode(request.frame, head).start(request, body)
            return Data()
        }
        slot.returned = true
        if case .failure = failed { return failed }  // refused before the handler ran (decoding, authorization)
        return slot.now
    }
}
