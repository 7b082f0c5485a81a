import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import ServiceHost
import SessionLogger
import Testing
import TestSupport
import ZeroMQ

/// The session logger in-process with keys: real CURVE over TCP, a real key directory on disk.
/// Each keyed service has a context of its own, since a context has one ZAP handler.
@Suite struct SecurityServiceTests {
    let scratch = ScratchDirectory("lht-security-tests")
    let keys: KeyDirectory
    let alice: Certificate
    let bob: Certificate
    let clientContext: Context

    init() throws {
        keys = try KeyDirectory.create(at: scratch.subdirectory("keys").path)
        alice = try keys.addUser(UserID("alice")!, outDirectory: scratch.subdirectory("alice").path)
        bob = try keys.addUser(UserID("bob")!, outDirectory: scratch.subdirectory("bob").path)
        clientContext = try Context()
    }

    func startLogger() throws -> InProcessService {
        let settings = try SessionLoggerSettings(SessionLoggerOptions.parse(
            Transport.tcp.bindArguments(.sessionLogger) + ["--data-dir", scratch.subdirectory("logger").path, "--keys", keys.path]))
        return try startService(context: Context()) { context in
            try SessionLogger(settings: settings, logger: quietLogger("session-logger"), context: context)
        }
    }

    func credentials(_ certificate: Certificate) throws -> CurveCredentials {
        CurveCredentials(publicKey: certificate.publicKey, secretKey: certificate.secretKey!,
                         serverKey: try keys.servicePublicKey(ServiceName.sessionLogger.rawValue))
    }

    func client(_ certificate: Certificate, _ logger: InProcessService) throws -> ServiceClient {
        ServiceClient(context: clientContext, endpoint: logger.api, credentials: try credentials(certificate))
    }

    func session(_ user: String, minute: Int) -> SessionLogRequest {
        let start = Instant(rfc3339: "2026-11-20T10:\(String(format: "%02d", minute)):00Z")!
        return SessionLogRequest(userId: UserID(user)!, activity: .mindfulness, start: start, end: start.adding(seconds: 60))
    }

    @Test func aUserActsOnlyForItselfAndSeesOnlyItsOwnEvents() throws {
        let logger = try startLogger()
        defer { logger.stop() }
        let asAlice = try client(alice, logger), asBob = try client(bob, logger)

        _ = try asAlice.call(Ops.sessionLog, session("alice", minute: 1), timeoutMilliseconds: 5000)
        _ = try asBob.call(Ops.sessionLog, session("bob", minute: 2), timeoutMilliseconds: 5000)
        // Alice writing or reading Bob's data: refused, nothing stored.
        #expect(throws: WireError(.unauthorized, "a user acts only for itself", field: "data.userId")) {
            try asAlice.call(Ops.sessionLog, session("bob", minute: 3), timeoutMilliseconds: 5000)
        }
        let range = SessionListRequest(userId: UserID("bob")!, from: Instant(rfc3339: "2026-11-20T00:00:00Z")!,
                                       until: Instant(rfc3339: "2026-11-21T00:00:00Z")!)
        #expect(throws: WireError.self) { try asAlice.call(Ops.sessionList, range, timeoutMilliseconds: 5000) }
        #expect(try asBob.call(Ops.sessionList, range, timeoutMilliseconds: 5000).sessions.count == 1)

        // events.since as Alice: her own event only, with the publisher's lastSeq.
        let page = try asAlice.call(Ops.eventsSince, EventsSinceRequest(), timeoutMilliseconds: 5000)
        #expect(page.events.map(\.topic) == ["session.logged.alice.mindfulness"])
        #expect(page.lastSeq == 2)
    }

    @Test func subscriptionsOutsideTheUsersOwnTopicsDeliverNothing() throws {
        let logger = try startLogger()
        defer { logger.stop() }
        let alicesKeys = try credentials(alice)
        var sockets: [String: Socket] = [:]
        for prefix in ["", "session.", "session.logged.bob.", "session.logged.bob", "session.logged.alice."] {
            let socket = try Socket(clientContext, .sub)
            try socket.secure(with: alicesKeys)
            try socket.subscribe(prefix)
            try socket.connect(logger.events)
            try socket.setReceiveTimeout(milliseconds: 200)
            sockets[prefix] = socket
        }
        for socket in sockets.values { try socket.awaitSubscribed() }
        let asBob = try client(bob, logger), asAlice = try client(alice, logger)
        _ = try asBob.call(Ops.sessionLog, session("bob", minute: 4), timeoutMilliseconds: 5000)
        _ = try asAlice.call(Ops.sessionLog, session("alice", minute: 5), timeoutMilliseconds: 5000)

        func topics(_ prefix: String) throws -> [String] {
            var seen: [String] = []
            while let frames = try sockets[prefix]!.receiveMultipart() { seen.append(String(decoding: frames[0], as: UTF8.self)) }
            return seen.filter { $0 != Heartbeat.topic }
        }
        #expect(try topics("session.logged.alice.") == ["session.logged.alice.mindfulness"])
        for prefix in ["", "session.", "session.logged.bob.", "session.logged.bob"] {
            #expect(try topics(prefix).isEmpty, "\"\(prefix)\" delivered another user's events")
        }
    }

    @Test func plaintextUnknownAndWrongServerKeyGetNoAnswerAndAreCounted() throws {
        let logger = try startLogger()
        defer { logger.stop() }
        let request = try WireJSON.encode(RequestFrame(op: Ops.health.name, data: NoFields()))
        let stranger = try Certificate.generate(metadata: ["user-id": "alice"])
        let strangers: [(String, CurveCredentials?)] = [
            ("plaintext", nil),
            ("unknown key", CurveCredentials(publicKey: stranger.publicKey, secretKey: stranger.secretKey!,
                                             serverKey: try keys.servicePublicKey(ServiceName.sessionLogger.rawValue))),
            ("wrong server key", CurveCredentials(publicKey: alice.publicKey, secretKey: alice.secretKey!,
                                                  serverKey: try keys.servicePublicKey(ServiceName.notifier.rawValue))),
        ]
        for (name, credentials) in strangers {
            let client = ServiceClient(context: clientContext, endpoint: logger.api, credentials: credentials)
            #expect(client.exchange(request, timeoutMilliseconds: 500) == nil, "\(name) got an answer")
        }
        let admin = try keys.adminCertificate()
        let health = try client(admin, logger).call(Ops.health, NoFields(), timeoutMilliseconds: 5000)
        #expect(health.counters["authRefused.unknown_key", default: 0] >= 1)
        #expect(health.counters["authRefused.handshake", default: 0] >= 2)
    }

    @Test func aRevokedKeyIsRefusedOnItsOpenConnection() throws {
        let logger = try startLogger()
        defer { logger.stop() }
        let asAlice = try client(alice, logger)
        _ = try asAlice.call(Ops.health, NoFields(), timeoutMilliseconds: 5000)
        try keys.revoke("alice")
        // The key set is re-read every 2 s; within 5 s the open connection's requests are refused.
        var refusal: WireError?
        try? waitUntil(timeout: 5, interval: 0.2, "a refusal") {
            do { _ = try asAlice.call(Ops.health, NoFields(), timeoutMilliseconds: 1000) } catch let error as WireError { refusal = error }
            return refusal != nil
        }
        #expect(refusal?.code == .unauthorized)
    }
}
