import Foundation
import Logging
import ZeroMQ

/// The ZAP handler (ZeroMQ RFC 27) of one context: decides which CURVE clients get in.
///
/// Start it BEFORE binding any CURVE server socket on the context: libzmq lets every client in
/// while no handler is bound at `inproc://zeromq.zap.01`. It admits a client whose public key is
/// one of `services/*.key` or an admitted `clients/*.key`, and answers with the client's Z85 public
/// key as User-Id. A service reads that property per request (`receiveMultipart(property: "User-Id")`)
/// and maps it with `resolve(_:)` against the current key set, so a revoked key's requests on an
/// already open connection resolve to nil. Keys are re-read every `reloadInterval` seconds.
///
/// Not seen here: a plaintext peer or one with the wrong server key fails the CURVE handshake
/// before any ZAP request is made (libzmq refuses it by itself).
public final class ZAPHandler: @unchecked Sendable {
    public static let endpoint = "inproc://zeromq.zap.01"

    /// Why a peer was refused; the counters are by these.
    public enum Refusal: String, Sendable, CaseIterable {
        /// NULL or PLAIN mechanism: no key at all.
        case notCurve = "not_curve"
        /// A key in neither services/ nor clients/.
        case unknownKey = "unknown_key"
        /// A key in clients/ whose certificate names no valid identity.
        case noIdentity = "no_identity"
        /// Not a ZAP 1.0 request.
        case malformed
    }

    private let keys: KeyDirectory
    private let logger: Logger
    private let reloadInterval: TimeInterval
    private let running = DispatchGroup()

    // Shared between the handler thread and the service's threads, under `lock`.
    private let lock = NSLock()
    private var admitted: [String: Principal] = [:]
    private var withoutIdentity: Set<String> = []
    private var counts: [Refusal: Int] = [:]
    private var stopping = false
    private var started = false

    public init(keys: KeyDirectory, logger: Logger, reloadInterval: TimeInterval = 2) {
        self.keys = keys
        self.logger = logger
        self.reloadInterval = reloadInterval
    }

    /// Loads the keys, binds the handler on `context` and returns once it is bound, so a CURVE
    /// server bound afterwards is covered from its first connection. Throws if it cannot bind
    /// (e.g. a handler is bound already). It runs until `stop()` or `context.shutdown()`.
    public func start(on context: Context) throws {
        lock.withLock {
            precondition(!started, "a ZAPHandler starts once")
            started = true
        }
        reload()
        let bound = DispatchSemaphore(value: 0)
        let bindError = LockedBox<Error?>(nil)
        running.enter()
        let thread = Thread { [self] in
            defer { running.leave() }
            let socket: Socket
            do {
                socket = try Socket(context, .rep)
                try socket.bind(ZAPHandler.endpoint)
            } catch {
                bindError.value = error
                bound.signal()
                return
            }
            bound.signal()
            serve(socket)
            socket.close()
        }
        thread.name = "zap-handler"
        thread.start()
        bound.wait()
        if let error = bindError.value { throw error }
    }

    /// Ends the handler thread and waits for it (at most a poll interval). Also ends by itself on
    /// `context.shutdown()`. Stop it only after the CURVE servers it covers are closed.
    public func stop() {
        lock.withLock { stopping = true }
        running.wait()
    }

    /// The principal behind a connection's User-Id property, from the current key set: nil for a
    /// connection without one (not through this handler) or a key revoked since.
    public func resolve(_ userId: String?) -> Principal? {
        guard let userId else { return nil }
        return lock.withLock { admitted[userId] }
    }

    /// Refusals so far, by reason (every reason present, zero or more).
    public var refusals: [Refusal: Int] {
        lock.withLock { Dictionary(uniqueKeysWithValues: Refusal.allCases.map { ($0, counts[$0] ?? 0) }) }
    }

    /// Re-reads services/ and clients/ now (also done every `reloadInterval` by the handler thread).
    public func reload() {
        var next = keys.servicePrincipals()
        var noIdentity: Set<String> = []
        for client in keys.clients() where !client.publicKey.isEmpty {
            // A service key wins: a clients/ copy of it must not demote it to a user.
            if next[client.publicKey] != nil { continue }
            if let principal = client.principal { next[client.publicKey] = principal } else { noIdentity.insert(client.publicKey) }
        }
        let changed = lock.withLock {
            defer { admitted = next; withoutIdentity = noIdentity }
            return admitted != next
        }
        if changed { logger.info("keys loaded", metadata: ["admitted": "\(next.count)", "dir": "\(keys.path)"]) }
    }

    // MARK: The handler thread

    private func serve(_ socket: Socket) {
        var lastReload = Date()
        var lastLogged: [String: Date] = [:]
        while !lock.withLock({ stopping }) {
            do {
                // A short wait so the key set stays fresh and `stop()` is seen without a request.
                let ready = try Poller.readable([socket], timeoutMilliseconds: 250)
                if Date().timeIntervalSince(lastReload) >= reloadInterval {
                    reload()
                    lastReload = Date()
                }
                guard ready[0], let request = try socket.receiveMultipart(dontWait: true) else { continue }
                try socket.send(multipart: answer(request, lastLogged: &lastLogged))
            } catch let error as ZMQError where error.isTerminated {
                return
            } catch {
                logger.error("zap handler: \(error)")
                return
            }
        }
    }

    /// RFC 27: version, request id, domain, address, routing id, mechanism, credentials…
    /// → version, request id, status code, status text, user id, metadata.
    private func answer(_ frames: [Data], lastLogged: inout [String: Date]) -> [Data] {
        let text = { (index: Int) in frames.indices.contains(index) ? String(decoding: frames[index], as: UTF8.self) : "" }
        let requestId = frames.count > 1 ? frames[1] : Data()
        func reply(_ code: String, _ status: String, userId: String = "") -> [Data] {
            [Data("1.0".utf8), requestId, Data(code.utf8), Data(status.utf8), Data(userId.utf8), Data()]
        }
        func refuse(_ reason: Refusal, who: String) -> [Data] {
            lock.withLock { counts[reason, default: 0] += 1 }
            // Once a minute per key or address: a misconfigured client reconnects every few ms.
            let now = Date()
            if lastLogged[who].map({ now.timeIntervalSince($0) >= 60 }) ?? true {
                lastLogged[who] = now
                logger.warning("refused a connection", metadata: ["reason": "\(reason.rawValue)", "peer": "\(who)", "address": "\(text(3))"])
            }
            return reply(reason == .malformed ? "500" : "400", reason.rawValue)
        }

        guard frames.count >= 6, text(0) == "1.0" else { return refuse(.malformed, who: "address \(text(3))") }
        guard text(5) == "CURVE", frames.count >= 7, frames[6].count == 32,
              let key = Z85.encode([UInt8](frames[6])) else {
            return refuse(.notCurve, who: "address \(text(3))")
        }
        let (principal, noIdentity) = lock.withLock { (admitted[key], withoutIdentity.contains(key)) }
        guard principal != nil else {
            return refuse(noIdentity ? .noIdentity : .unknownKey, who: "key \(Certificate.fingerprint(key))")
        }
        return reply("200", "OK", userId: key)
    }
}

/// A value handed from the handler thread to the starting one.
private final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
