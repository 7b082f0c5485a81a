import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

extension ServiceHost {
    /// Runs requests in order and returns their reply frames. Consecutive batched requests share
    /// one transaction (one savepoint each): group commit. `allowedOps` narrows what a channel may
    /// ask (the intake takes only the two log ops).
    /// A deferred op has no way back here: it answers `unavailable` (the intake allows none).
    public func process(_ requests: [IncomingRequest], allowedOps: [OpInfo]? = nil) -> [Data] {
        process(requests, allowedOps: allowedOps, later: { _ in nil }).map { ($0?.outcome ?? Self.answeredLater).frame }
    }

    /// As `process`, for a channel nobody answers (the intake): each request's error, nil where it succeeded.
    public func failures(processing requests: [IncomingRequest], allowedOps: [OpInfo]) -> [WireError?] {
        process(requests, allowedOps: allowedOps, later: { _ in nil }).map {
            guard case .failure(let error) = $0?.outcome ?? Self.answeredLater else { return nil }
            return error
        }
    }

    private static let answeredLater = Outcome.failure(WireError(.unavailable, "this op is answered later, which this channel cannot do"))

    /// As `process`; a deferred request answered later has nil here, and its reply frame goes to
    /// `later(index)` when it comes. `atOnce` marks a reply that tells of no stored data (`health`),
    /// so it need not wait for commits to reach the disk. A read behind the log (`.reading`) has
    /// nil too, and its reply frame goes to `answerRead(index)` when it comes; without `answerRead`,
    /// this waits for the reads' answers and returns them with the rest.
    func process(_ requests: [IncomingRequest], allowedOps: [OpInfo]?, later: (Int) -> ((Data) -> Void)?,
                 answerRead: ((Int) -> ((Data) -> Void))? = nil) -> [(outcome: Outcome, atOnce: Bool)?] {
        var replies = [(outcome: Outcome, atOnce: Bool)?](repeating: (.success(Data()), false), count: requests.count)
        var batch: [(index: Int, head: RequestHead, operation: any Operation, started: DispatchTime)] = []

        func finished(_ index: Int, op: String, _ outcome: Outcome, since started: DispatchTime) {
            replies[index] = (outcome, op == Ops.health.name)
            metrics.request(op: op, outcome: outcome.label, nanoseconds: DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds)
            if case .failure(let error) = outcome, error.code == .unauthorized {
                refused(requests[index].caller, reason: "request", op, op: op, userId: Self.userId(in: requests[index].frame))
            }
        }

        func runBatch() {
            guard !batch.isEmpty else { return }
            let ahead = DecodeAhead(batch.map { (requests[$0.index].frame, $0.head, $0.operation) })
            var outcomes: [Outcome]
            // Where each read's answer goes, once its batch committed (the answers come after that).
            var sends: [Int: (Data) -> Void] = [:]
            do {
                // A full disk may have rolled the whole transaction back: nothing more can be stored in it.
                outcomes = try write { tx in
                    try tx.eachIsolated(Array(batch.enumerated()), isFatal: { Self.unavailable($0) != nil }) { position, entry in
                        let request = requests[entry.index]
                        let decoded = try ahead?.input(position)?.get() ?? entry.operation.decode(request.frame, entry.head)
                        guard entry.operation.placement == .reading else { return try decoded.run(tx, request.caller) }
                        let read = try decoded.prepareRead(request.caller)
                        tx.readBehindTheLog(read) { [unowned self] answer in
                            finished(entry.index, op: entry.head.op, outcome(entry.head.op, requests[entry.index]) { try answer.get() },
                                     since: entry.started)
                            sends[entry.index]?(replies[entry.index]!.outcome.frame)
                        }
                        return Data()  // the answer replaces it
                    }
                }.enumerated().map { offset, result in
                    let entry = batch[offset]
                    return outcome(entry.head.op, requests[entry.index]) { try result.get() }
                }
            } catch {
                // A full disk or a lost database aborts the batch's transaction: say so rather than `internal`.
                let metadata: Logger.Metadata = ["error": "\(error)", "requests": "\(batch.count)"]
                let failure = storeUnavailable(error, metadata) ?? {
                    recordError("batch transaction failed", metadata)
                    return WireError(.internal, "the request could not be stored")
                }()
                outcomes = batch.map { _ in .failure(failure) }
            }
            for (entry, result) in zip(batch, outcomes) {
                guard case .success = result, entry.operation.placement == .reading else {
                    finished(entry.index, op: entry.head.op, result, since: entry.started)
                    continue
                }
                replies[entry.index] = nil
                sends[entry.index] = answerRead?(entry.index)
            }
            batch.removeAll()
            if answerRead == nil { store.readsBehindTheLog?.waitForAnswers() }
        }

        for (index, request) in requests.enumerated() {
            let started = DispatchTime.now()
            let head: RequestHead
            let operation: any Operation
            do throws(WireError) {
                try request.checkSize()
                head = try request.head.get()
                guard let found = operations[head.op], allowedOps?.contains(found.info) ?? true else {
                    throw WireError(.unknownOp, "\(name) has no op \"\(head.op.prefix(60))\"", field: "op")
                }
                operation = found
            } catch {
                // Unknown and unreadable ops share one label, so a client cannot grow the label set.
                finished(index, op: "unknown", .failure(error), since: started)
                continue
            }
            switch operation.placement {
            case .batched, .reading:
                batch.append((index, head, operation, started))
            case .outside:
                runBatch()
                finished(index, op: head.op, outcome(head.op, request) {
                    try operation.decode(request.frame, head).run(nil, request.caller)
                }, since: started)
            case .deferred:
                runBatch()
                let send = later(index)
                let answeredNow = startDeferred(operation, request, head: head) { [unowned self] outcome in
                    metrics.request(op: head.op, outcome: outcome.label, nanoseconds: DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds)
                    send?(outcome.frame)
                }
                if let answeredNow {
                    finished(index, op: head.op, answeredNow, since: started)
                } else {
                    replies[index] = nil
                }
            }
        }
        runBatch()
        return replies
    }

    /// What `body` returned or threw; an unexpected error is `internal`, never a crash, and is
    /// logged with the request's op and userId (where it names one).
    func outcome(_ op: String, _ request: IncomingRequest, _ body: () throws -> Data) -> Outcome {
        do {
            return .success(try body())
        } catch let error as WireError {
            return .failure(error)
        } catch {
            var metadata: Logger.Metadata = ["error": "\(error)", "op": "\(op)"]
            if let userId = request.caller.user?.description ?? Self.userId(in: request.frame) { metadata["userId"] = "\(userId)" }
            if let unavailable = storeUnavailable(error, metadata) { return .failure(unavailable) }
            recordError("request failed", metadata)
            return .failure(WireError(.internal, "the request failed inside \(name); it was not applied"))
        }
    }

    /// `unavailable` for a full or failing disk or a database out of reach (`StoreUnavailable.cause`);
    /// nil for any other error. Counted each time (`lht_storage_errors_total{reason}`), logged at most
    /// once a minute for each reason: until space is back, every request fails the same way.
    func storeUnavailable(_ error: Error, _ metadata: Logger.Metadata) -> WireError? {
        guard let cause = StoreUnavailable.cause(of: error) else { return nil }
        countMetric("storage_errors", "reason", cause.label)
        if StoreUnavailable.shouldLog(cause.label) {
            recordError("the store is unavailable (logged at most once a minute)", metadata.merging(["reason": "\(cause.label)"]) { $1 })
        }
        return Self.unavailable(cause.message)
    }

    /// A full disk or a database out of reach is a dependency that is down, not a bug: `unavailable`,
    /// and the client may repeat the request (nothing of it was stored; the service needs no restart).
    static func unavailable(_ error: Error) -> WireError? {
        StoreUnavailable.reason(error).map(unavailable)
    }

    static func unavailable(_ reason: String) -> WireError {
        WireError(.unavailable, "\(reason): the request was not stored; repeat it later")
    }

    /// `data.userId` of a request frame, for log lines about a failed or refused request (a valid
    /// userId only: anything else a client sent stays out of the log).
    static func userId(in frame: Data) -> String? {
        FrameHead(frame)?.dataString("userId").flatMap(UserID.init)?.description
    }
}
