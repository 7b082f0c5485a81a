import Foundation
import GRDB
import LHTSchema
import Logging
import ZeroMQ
import Storage

/// Where a handler runs (see `ServiceHost.handle`).
public enum Placement: Sendable {
    /// In the batch's transaction, one savepoint per request: group commit, one fsync per batch.
    /// A handler that changes memory does so at once with `tx.onRollback`, so the next request sees it.
    case batched
    /// Outside any transaction: the handler waits on something first (another service, a catch-up)
    /// and must not hold a transaction meanwhile; it calls `write` itself. It holds the loop while
    /// it runs: nothing here may wait on another service (use `.deferred`).
    case outside
    /// A read of the tables where a thread applies them behind the log (`Store.readsBehindTheLog`):
    /// it runs on that thread, at its point in the log, so it sees exactly the writes before it in
    /// the batch and neither splits the batch nor holds the loop (#30). Its reply leaves with its
    /// turn's, in order (`OrderedReplies`). Where the write transaction has the tables, a read is
    /// `.batched` and runs in it, with the same result.
    case reading
    /// Answered later, without holding the loop: the handler starts its upstream work and returns,
    /// the loop keeps the routing envelope and sends the reply when the handler answers
    /// (`handleDeferred`, Deferred.swift).
    case deferred
}

/// A registered op: decodes its request, checks the caller against the catalog's rule, runs, and
/// returns the reply's `data` bytes. A class: a batch holds one per request, and copying a struct
/// of closures retained each of them.
final class Operation {
    let info: OpInfo
    let placement: Placement
    /// Decodes the request's `data` into the handler's input. It reads nothing but its arguments,
    /// so it may run on another thread (`DecodeAhead`).
    let decode: @Sendable (_ frame: Data, _ head: RequestHead) throws -> Any
    /// Checks the caller and runs the handler on a decoded input.
    let apply: (_ input: Any, _ tx: Transaction?, _ caller: Caller) throws -> Data
    /// For `.deferred` ops: authorizes and starts the handler on a decoded input; it answers through the closure.
    let start: ((_ input: Any, _ request: IncomingRequest, _ answer: @escaping (Outcome) -> Void) throws -> Void)?
    /// For `.reading` ops: authorizes, and returns the read to run behind the log.
    let read: ((_ input: Any, _ caller: Caller) throws -> (StoreConnection) throws -> Data)?

    init(info: OpInfo, placement: Placement, decode: @escaping @Sendable (_ frame: Data, _ head: RequestHead) throws -> Any,
         apply: @escaping (_ input: Any, _ tx: Transaction?, _ caller: Caller) throws -> Data,
         start: ((_ input: Any, _ request: IncomingRequest, _ answer: @escaping (Outcome) -> Void) throws -> Void)? = nil,
         read: ((_ input: Any, _ caller: Caller) throws -> (StoreConnection) throws -> Data)? = nil) {
        self.info = info
        self.placement = placement
        self.decode = decode
        self.apply = apply
        self.start = start
        self.read = read
    }

    /// Decodes `request` (unless `decoded` has its input already) and runs it.
    func run(_ request: IncomingRequest, _ head: RequestHead, _ tx: Transaction?, decoded: Result<Any, Error>? = nil) throws -> Data {
        let input = try decoded?.get() ?? decode(request.frame, head)
        return try apply(input, tx, request.caller)
    }

    /// For a `.reading` op: decodes and authorizes `request`, and returns its read.
    func prepareRead(_ request: IncomingRequest, _ head: RequestHead, decoded: Result<Any, Error>?) throws -> (StoreConnection) throws -> Data {
        try read!(decoded?.get() ?? decode(request.frame, head), request.caller)
    }
}

extension ServiceHost {
    /// Requests read in one turn share one transaction: group commit, one fsync for the batch.
    /// A batch is bounded in count and in bytes, so memory follows the limits, not the clients.
    public static let batchLimit = 512
    public static let batchBytes = 8 << 20
    /// PROTOCOL "Requests and replies": a larger request frame is `invalid_argument`, answered from its
    /// size alone; libzmq closes the connection of a peer whose frame is over `largestFrame`.
    public static let largestRequest = 1 << 20
    public static let largestFrame = 4 << 20

    func registerCommonOps() {
        // Outside any transaction: it reads only memory, and never waits for the log to be rewound.
        handleOutside(Ops.health) { [unowned self] _ in health() }
        register(Ops.eventsSince, .batched, owner: nil) { [unowned self] query, tx, caller in
            // A user sees only its own events, filtered before `limit` (PROTOCOL "Security").
            try eventLog.since(query, for: caller.mayDoEverything ? nil : caller.user, publisher: service, in: tx!.sql)
        }
    }

    // MARK: Registration

    /// Registers the handler of a catalog op this service serves; it gets the decoded request and,
    /// unless placed `.outside`, the transaction it runs in. An op whose access is `.ownRecord`
    /// names its record's `owner` (nil: no such record), so the host can refuse other users.
    public func handle<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement = .batched,
                                      owner: ((Input) throws -> UserID?)? = nil,
                                      _ handler: @escaping (Input, Transaction) throws -> Output) {
        handleEncoded(op, placement, owner: owner) { input, tx in try WireJSON.encode(handler(input, tx)) }
    }

    /// As `handle`, for replies that write their own JSON (`WireJSON.encode(writable:)`).
    public func handle<Input, Output: WireJSONWritable>(_ op: Op<Input, Output>, _ placement: Placement = .batched,
                                                        owner: ((Input) throws -> UserID?)? = nil,
                                                        _ handler: @escaping (Input, Transaction) throws -> Output) {
        handleEncoded(op, placement, owner: owner) { input, tx in try WireJSON.encode(writable: handler(input, tx)) }
    }

    /// Registers an op placed `.outside` any transaction.
    public func handleOutside<Input, Output>(_ op: Op<Input, Output>, owner: ((Input) throws -> UserID?)? = nil,
                                             _ handler: @escaping (Input) throws -> Output) {
        register(op, .outside, owner: owner) { input, _, _ in try WireJSON.encode(handler(input)) }
    }

    /// As `handleOutside`, for replies that write their own JSON, without a cast per reply to find that out.
    public func handleOutside<Input, Output: WireJSONWritable>(_ op: Op<Input, Output>, owner: ((Input) throws -> UserID?)? = nil,
                                                               _ handler: @escaping (Input) throws -> Output) {
        register(op, .outside, owner: owner) { input, _, _ in try WireJSON.encode(writable: handler(input)) }
    }

    /// Registers a read of the service's tables: placed `.reading` where they are applied behind the
    /// log (`Store.readsBehindTheLog`), else `.batched`, reading in the write transaction. Either way
    /// it sees exactly the writes before it in its batch. `handler` may run on another thread: it
    /// reads nothing but its arguments and the connection.
    public func handleRead<Input, Output>(_ op: Op<Input, Output>, owner: ((Input) throws -> UserID?)? = nil,
                                          _ handler: @escaping (Input, StoreConnection) throws -> Output) {
        guard store.readsBehindTheLog != nil else { return handle(op, owner: owner) { input, tx in try handler(input, tx.sql) } }
        register(op, .reading, owner: owner, { _, _, _ in throw WireError(.internal, "\(op.name) is read behind the log") }) { input in
            { sql in try WireJSON.encode(handler(input, sql)) }
        }
    }

    /// As `handle`, for handlers that return the reply's `data` already encoded (stored JSON, sent as it is).
    public func handleEncoded<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement = .batched,
                                             owner: ((Input) throws -> UserID?)? = nil,
                                             _ handler: @escaping (Input, Transaction) throws -> Data) {
        precondition(placement != .outside && placement != .deferred, "use handleOutside or handleDeferred")
        register(op, placement, owner: owner) { input, tx, _ in try handler(input, tx!) }
    }

    private func register<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement, owner: ((Input) throws -> UserID?)?,
                                         _ handler: @escaping (Input, Transaction?, Caller) throws -> Data,
                                         read: ((Input) -> (StoreConnection) throws -> Data)? = nil) {
        precondition(op.info.service == nil || op.info.service == service, "\(op.name) is not an op of \(name)")
        precondition((op.info.access == .ownRecord) == (owner != nil), "\(op.name): an owner exactly for .ownRecord ops")
        // Decoded first: a malformed request gets invalid_argument whoever sends it.
        let decodeData = requestDataDecoder(for: Input.self)
        operations[op.name] = Operation(info: op.info, placement: placement, decode: { frame, head in
            try decodeData(frame, head)
        }, apply: { input, tx, caller in
            let input = input as! Input
            try Self.authorize(op.info, input, caller, owner: owner)
            return try handler(input, tx, caller)
        }, read: read.map { read in { input, caller in
            let input = input as! Input
            try Self.authorize(op.info, input, caller, owner: owner)
            return read(input)
        } })
    }

    /// The ops this service answers, for checks against the catalog.
    public var registeredOps: Set<String> { Set(operations.keys) }

    // MARK: Authorization (PROTOCOL "Security": what a user may do)

    static func authorize<Input>(_ info: OpInfo, _ input: Input, _ caller: Caller, owner: ((Input) throws -> UserID?)?) throws {
        if caller.mayDoEverything { return }
        guard let user = caller.user else {
            throw caller.refusal
        }
        switch info.access {
        case .anyone, .ownEvents:
            return
        case .privileged:
            throw WireError(.unauthorized, "\(info.name) is for services and admins", field: "op")
        case .ownUser:
            guard let scoped = input as? UserScoped, scoped.userId == user else {
                throw WireError(.unauthorized, "a user acts only for itself", field: "data.userId")
            }
        case .ownRecord:
            // Another user's record answers exactly as an unknown id does: no existence oracle.
            guard let owner, try owner(input) == user else {
                throw (input as? RecordScoped)?.notFound ?? WireError(.notFound, "no such record")
            }
        }
    }

    // MARK: Serving

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
            if reply.atOnce { sendReply(reply.frame, to: envelopes[index]) } else { ordered.fill(index, reply.frame) }
        }
        commits.afterDurable { ordered.becameDurable() }
    }

    /// Reads what waits on the api into `held`; true once the held requests should run (`GroupCommit`).
    private func gatheredEnough() throws -> Bool {
        while held.count < Self.batchLimit, heldBytes < Self.batchBytes, let message = try receiveAPIRequest() { hold(message) }
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
            while held.count < Self.batchLimit, heldBytes < Self.batchBytes,
                  let message = try? receiveAPIRequest() {
                guard (try? message.request.head.get())?.op == Ops.health.name else {
                    hold(message)
                    continue
                }
                sendReply(process([message.request])[0], to: message.envelope)
            }
        }
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

    /// Runs requests in order and returns their reply frames. Consecutive batched requests share
    /// one transaction (one savepoint each): group commit. `allowedOps` narrows what a channel may
    /// ask (the intake takes only the two log ops).
    /// A deferred op has no way back here: it answers `unavailable` (the intake allows none).
    public func process(_ requests: [IncomingRequest], allowedOps: [OpInfo]? = nil) -> [Data] {
        process(requests, allowedOps: allowedOps, later: { _ in nil }).map {
            $0?.frame ?? Reply.failure(WireError(.unavailable, "this op is answered later, which this channel cannot do"))
        }
    }

    /// As `process`; a deferred request answered later has nil here, and its reply frame goes to
    /// `later(index)` when it comes. `atOnce` marks a reply that tells of no stored data (`health`),
    /// so it need not wait for commits to reach the disk. A read behind the log (`.reading`) has
    /// nil too, and its reply frame goes to `answerRead(index)` when it comes; without `answerRead`,
    /// this waits for the reads' answers and returns them with the rest.
    func process(_ requests: [IncomingRequest], allowedOps: [OpInfo]?, later: (Int) -> ((Data) -> Void)?,
                 answerRead: ((Int) -> ((Data) -> Void))? = nil) -> [(frame: Data, atOnce: Bool)?] {
        var replies = [(frame: Data, atOnce: Bool)?](repeating: (Data(), false), count: requests.count)
        var batch: [(index: Int, head: RequestHead, operation: Operation, started: DispatchTime)] = []

        func finished(_ index: Int, op: String, _ outcome: Outcome, since started: DispatchTime) {
            replies[index] = (outcome.frame, op == Ops.health.name)
            metrics.request(op: op, outcome: outcome.label, nanoseconds: DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds)
            if case .failure(let error) = outcome, error.code == .unauthorized {
                refused(requests[index].caller, reason: "request", op, op: op, userId: Self.userId(in: requests[index].frame))
            }
        }

        func runBatch() {
            guard !batch.isEmpty else { return }
            let ahead = DecodeAhead(batch.map { (requests[$0.index].frame, $0.head, $0.operation.decode) })
            var outcomes: [Outcome]
            // Where each read's answer goes, once its batch committed (the answers come after that).
            var sends: [Int: (Data) -> Void] = [:]
            do {
                // A full disk may have rolled the whole transaction back: nothing more can be stored in it.
                outcomes = try write { tx in
                    try tx.eachIsolated(Array(batch.enumerated()), isFatal: { Self.unavailable($0) != nil }) { position, entry in
                        guard entry.operation.placement == .reading else {
                            return try entry.operation.run(requests[entry.index], entry.head, tx, decoded: ahead?.input(position))
                        }
                        let read = try entry.operation.prepareRead(requests[entry.index], entry.head, decoded: ahead?.input(position))
                        tx.readBehindTheLog(read) { [unowned self] answer in
                            finished(entry.index, op: entry.head.op, outcome(entry.head.op, requests[entry.index]) { try answer.get() },
                                     since: entry.started)
                            sends[entry.index]?(replies[entry.index]!.frame)
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
            let operation: Operation
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
                finished(index, op: head.op, outcome(head.op, request) { try operation.run(request, head, nil) }, since: started)
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
        struct Probe: Decodable {
            struct Fields: Decodable { let userId: String? }
            let data: Fields?
        }
        guard let text = (try? JSONDecoder().decode(Probe.self, from: frame))?.data?.userId else { return nil }
        return UserID(text)?.description
    }
}

/// A request's result: its reply `data` or its error.
enum Outcome {
    case success(Data)
    case failure(WireError)

    var frame: Data {
        switch self {
        case .success(let data): Reply.success(rawData: data)
        case .failure(let error): Reply.failure(error)
        }
    }

    /// `ok` or the error code, as the metrics label it.
    var label: String {
        switch self {
        case .success: "ok"
        case .failure(let error): error.code.rawValue
        }
    }
}
