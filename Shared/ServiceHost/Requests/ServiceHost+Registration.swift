import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

extension ServiceHost {
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
        register(op, .reading, owner: owner, .read { input in { sql in try WireJSON.encode(handler(input, sql)) } })
    }

    /// As `handle`, for handlers that return the reply's `data` already encoded (stored JSON, sent as it is).
    public func handleEncoded<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement = .batched,
                                             owner: ((Input) throws -> UserID?)? = nil,
                                             _ handler: @escaping (Input, Transaction) throws -> Data) {
        precondition(placement != .outside && placement != .deferred, "use handleOutside or handleDeferred")
        register(op, placement, owner: owner) { input, tx, _ in try handler(input, tx!) }
    }

    private func register<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement, owner: ((Input) throws -> UserID?)?,
                                         _ handler: @escaping (Input, Transaction?, Caller) throws -> Data) {
        register(op, placement, owner: owner, .run(handler))
    }

    func register<Input, Output>(_ op: Op<Input, Output>, _ placement: Placement, owner: ((Input) throws -> UserID?)?,
                                 _ handler: TypedOperation<Input>.Handler) {
        precondition(op.info.service == nil || op.info.service == service, "\(op.name) is not an op of \(name)")
        precondition((op.info.access == .ownRecord) == (owner != nil), "\(op.name): an owner exactly for .ownRecord ops")
        // Decoded first: a malformed request gets invalid_argument whoever sends it.
        operations[op.name] = TypedOperation(info: op.info, placement: placement, decode: { frame, head in try Input.read(from: frame, head: head) },
                                             authorize: { input, caller in try Self.authorize(op.info, input, caller, owner: owner) },
                                             handler: handler)
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
}
