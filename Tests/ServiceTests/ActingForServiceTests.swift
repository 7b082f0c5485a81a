import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import ServiceHost
import SessionLogger
import Testing
import TestSupport
import ZeroMQ

/// PROTOCOL "Acting for a user": `as` beside `op` and `data`. From a service or admin identity (or
/// without keys) every per-user rule applies as if that user sent the request; from a user
/// identity, `as` naming another user is `unauthorized`. The session logger in-process, real CURVE.
@Suite struct ActingForServiceTests {
    let scratch = ScratchDirectory("lht-acting-for-tests")
    let keys: KeyDirectory
    let alice: Certificate
    let clientContext: Context

    init() throws {
        keys = try KeyDirectory.create(at: scratch.subdirectory("keys").path)
        alice = try keys.addUser(UserID("alice")!, outDirectory: scratch.subdirectory("alice").path)
        clientContext = try Context()
    }

    func startLogger(keys withKeys: Bool) throws -> InProcessService {
        let settings = try SessionLoggerSettings(SessionLoggerOptions.parse(
            Transport.tcp.bindArguments(.sessionLogger) + ["--data-dir", scratch.subdirectory("logger").path]
                + (withKeys ? ["--keys", keys.path] : [])))
        return try startService(context: Context()) { context in
            try SessionLogger(settings: settings, logger: quietLogger("session-logger"), context: context)
        }
    }

    func client(_ certificate: Certificate?, _ logger: InProcessService) throws -> ServiceClient {
        let credentials = try certificate.map {
            CurveCredentials(publicKey: $0.publicKey, secretKey: $0.secretKey!, serverKey: try keys.servicePublicKey(ServiceName.sessionLogger.rawValue))
        }
        return ServiceClient(context: clientContext, endpoint: logger.api, credentials: credentials)
    }

    func session(_ user: String, minute: Int) -> SessionLogRequest {
        let start = Instant(rfc3339: "2026-11-20T10:\(String(format: "%02d", minute)):00Z")!
        return SessionLogRequest(userId: UserID(user)!, activity: .mindfulness, start: start, end: start.adding(seconds: 60))
    }

    /// Sends `op` with `data` and `as`, and returns the reply's error (nil: ok).
    func send<Input: Encodable, Output>(_ client: ServiceClient, _ op: Op<Input, Output>, _ data: Input, as user: String?) throws -> WireError? {
        let frame = try WireJSON.encode(RequestFrame(op: op.name, data: data, as: user.flatMap(UserID.init)))
        let reply = try #require(client.exchange(frame, timeoutMilliseconds: 5000))
        return try WireJSON.decode(ReplyFrame<JSONValue>.self, from: reply).error
    }

    func sessions(_ user: String, _ client: ServiceClient) throws -> Int {
        try client.call(Ops.sessionList, SessionListRequest(userId: UserID(user)!, from: Instant(rfc3339: "2026-11-20T00:00:00Z")!,
                                                            until: Instant(rfc3339: "2026-11-21T00:00:00Z")!), timeoutMilliseconds: 5000).sessions.count
    }

    @Test func anAdminActingForAUserGetsThatUsersRules() throws {
        let logger = try startLogger(keys: true)
        defer { logger.stop() }
        let admin = try client(try keys.adminCertificate(), logger)
        #expect(try send(admin, Ops.sessionLog, session("alice", minute: 1), as: "alice") == nil)
        #expect(try send(admin, Ops.sessionLog, session("bob", minute: 2), as: "alice")
                == WireError(.unauthorized, "a user acts only for itself", field: "data.userId"))
        #expect(try send(admin, Ops.sessionLog, session("bob", minute: 3), as: nil) == nil)
        #expect(try sessions("bob", admin) == 1)
        // events.since as Alice: her own events only; clock-like privileged ops are refused.
        let frame = try WireJSON.encode(RequestFrame(op: Ops.eventsSince.name, data: EventsSinceRequest(), as: UserID("alice")))
        let page = try WireJSON.decode(ReplyFrame<EventsSinceReply>.self, from: try #require(admin.exchange(frame, timeoutMilliseconds: 5000)))
        #expect(page.data?.events.map(\.topic) == ["session.logged.alice.mindfulness"])
    }

    @Test func aUserCannotActForAnotherUser() throws {
        let logger = try startLogger(keys: true)
        defer { logger.stop() }
        let asAlice = try client(alice, logger), admin = try client(try keys.adminCertificate(), logger)
        let refusal = WireError(.unauthorized, "a user acts only for itself", field: "as")
        // Naming Bob in `as`: refused whatever the request, her own data included; nothing stored.
        #expect(try send(asAlice, Ops.sessionLog, session("bob", minute: 4), as: "bob") == refusal)
        #expect(try send(asAlice, Ops.sessionLog, session("alice", minute: 5), as: "bob") == refusal)
        #expect(try send(asAlice, Ops.health, NoFields(), as: "bob") == refusal)
        #expect(try sessions("bob", admin) == 0)
        #expect(try sessions("alice", admin) == 0)
        // Naming herself changes nothing.
        #expect(try send(asAlice, Ops.sessionLog, session("alice", minute: 6), as: "alice") == nil)
        #expect(try sessions("alice", admin) == 1)
    }

    @Test func withoutKeysAsAppliesTheSameRules() throws {
        let logger = try startLogger(keys: false)
        defer { logger.stop() }
        let local = try client(nil, logger)
        #expect(try send(local, Ops.sessionLog, session("bob", minute: 7), as: "alice")
                == WireError(.unauthorized, "a user acts only for itself", field: "data.userId"))
        #expect(try send(local, Ops.sessionLog, session("alice", minute: 8), as: "alice") == nil)
        #expect(try sessions("bob", local) == 0)
    }

    @Test func anAsThatIsNoUserIdIsInvalid() throws {
        let logger = try startLogger(keys: false)
        defer { logger.stop() }
        let local = try client(nil, logger)
        for value in [#""a.b""#, "5", #""""#] {
            let frame = Data(#"{"v":1,"op":"health","as":\#(value)}"#.utf8)
            let reply = try WireJSON.decode(ReplyFrame<JSONValue>.self, from: try #require(local.exchange(frame, timeoutMilliseconds: 5000)))
            #expect(reply.error?.code == .invalidArgument && reply.error?.field == "as", "as: \(value)")
        }
        let null = Data(#"{"v":1,"op":"health","as":null}"#.utf8)
        #expect(try WireJSON.decode(ReplyFrame<JSONValue>.self, from: try #require(local.exchange(null, timeoutMilliseconds: 5000))).ok)
    }
}
