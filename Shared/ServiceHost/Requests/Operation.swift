import Foundation
import LHTSchema
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
    /// the batch and neither splits the batch nor holds the loop. Its reply leaves with its
    /// turn's, in order (`OrderedReplies`). Where the write transaction has the tables, a read is
    /// `.batched` and runs in it, with the same result.
    case reading
    /// Answered later, without holding the loop: the handler starts its upstream work and returns,
    /// the loop keeps the routing envelope and sends the reply when the handler answers
    /// (`handleDeferred`, Deferred.swift).
    case deferred
}

/// A registered op, as the loop holds it whatever its input: its catalog entry, where it runs, and
/// how to decode a request for it. Each is a `TypedOperation`, which decodes to its own input type.
protocol Operation: AnyObject, Sendable {
    var info: OpInfo { get }
    var placement: Placement { get }

    /// Decodes the request's `data` into the op's input. It reads nothing but its arguments and the
    /// op's constants, so it may run on another thread (`DecodeAhead`).
    func decode(_ frame: Data, _ head: RequestHead) throws -> any DecodedRequest
}

/// An op whose input is `Input`: its decoder, its check of the caller, and its handler. A class: a
/// batch holds one per request, and copying a struct of closures retained each of them.
final class TypedOperation<Input>: Operation, @unchecked Sendable {
    /// What a handler does with a decoded, authorized input, by placement.
    enum Handler {
        /// `.batched` and `.outside`: runs and returns the reply's `data` (`tx` nil outside).
        case run((_ input: Input, _ tx: Transaction?, _ caller: Caller) throws -> Data)
        /// `.reading`: the read to run behind the log.
        case read((_ input: Input) -> (StoreConnection) throws -> Data)
        /// `.deferred`: starts the handler, which answers through the closure.
        case start((_ input: Input, _ request: IncomingRequest, _ answer: @escaping (Outcome) -> Void) throws -> Void)
    }

    let info: OpInfo
    let placement: Placement
    let decodeData: @Sendable (_ frame: Data, _ head: RequestHead) throws -> Input
    /// Throws when the caller may not do this with `input` (`ServiceHost.authorize`).
    let authorize: (_ input: Input, _ caller: Caller) throws -> Void
    let handler: Handler

    init(info: OpInfo, placement: Placement, decode: @escaping @Sendable (_ frame: Data, _ head: RequestHead) throws -> Input,
         authorize: @escaping (_ input: Input, _ caller: Caller) throws -> Void, handler: Handler) {
        self.info = info
        self.placement = placement
        decodeData = decode
        self.authorize = authorize
        self.handler = handler
    }

    func decode(_ frame: Data, _ head: RequestHead) throws -> any DecodedRequest {
        Decoded(self, try decodeData(frame, head))
    }
}

/// A request decoded for its op: what the loop runs, with the input as its op's own type.
protocol DecodedRequest: Sendable {
    /// Checks the caller and runs the handler (`.batched`, `.outside`).
    func run(_ tx: Transaction?, _ caller: Caller) throws -> Data
    /// For a `.reading` op: checks the caller and returns the read to run behind the log.
    func prepareRead(_ caller: Caller) throws -> (StoreConnection) throws -> Data
    /// For a `.deferred` op: checks the caller and starts the handler, which answers through `answer`.
    func start(_ request: IncomingRequest, _ answer: @escaping (Outcome) -> Void) throws
}

private final class Decoded<Input>: DecodedRequest, @unchecked Sendable {
    let operation: TypedOperation<Input>
    let input: Input

    init(_ operation: TypedOperation<Input>, _ input: Input) {
        self.operation = operation
        self.input = input
    }

    func run(_ tx: Transaction?, _ caller: Caller) throws -> Data {
        guard case .run(let handler) = operation.handler else { throw misplaced }
        try operation.authorize(input, caller)
        return try handler(input, tx, caller)
    }

    func prepareRead(_ caller: Caller) throws -> (StoreConnection) throws -> Data {
        guard case .read(let read) = operation.handler else { throw misplaced }
        try operation.authorize(input, caller)
        return read(input)
    }

    func start(_ request: IncomingRequest, _ answer: @escaping (Outcome) -> Void) throws {
        guard case .start(let start) = operation.handler else { throw misplaced }
        try operation.authorize(input, request.caller)
        try start(input, request, answer)
    }

    /// Asked to run in a way its placement does not: a bug in the host, answered `internal`.
    private var misplaced: WireError {
        WireError(.internal, "\(operation.info.name) is placed \(operation.placement), not run this way")
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
