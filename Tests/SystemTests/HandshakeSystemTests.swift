import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// PROTOCOL "Security" at the door, against the real executables: keys made by the real `lht keys`, real
/// CurveZMQ handshakes through each service's ZAP handler. Raw sockets where the point is that nothing
/// answers. Serialized: the revocation deadline is a wall-clock one.
@Suite(.serialized) struct HandshakeSystemTests {
    // MARK: Handshakes

    @Test func unknownKeyPlaintextWrongServerKeyAndNoIdentityGetNoAnswer() throws {
        let system = try LHTSystem(services: [.planner], keys: true)
        let keys = system.keyDirectory
        let api = system.logger.api
        let admin = try keys.adminCertificate()
        let loggerKey = try keys.servicePublicKey(ServiceName.sessionLogger.rawValue)

        // A certificate without identity in clients/: present, but not let in (the handler sees it within 5 s).
        let anonymous = try Certificate.generate()
        try anonymous.writePublic(to: keys.clientsPath + "/anonymous.key")
        // Control: the admin's key is answered, so silence below is the refusal and not a dead service.
        #expect(try rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: loggerKey)) })
        // The handler re-reads clients/ every few seconds: knocked until it refuses the certificate for its missing identity.
        let anonymousCredentials = CurveCredentials(publicKey: anonymous.publicKey, secretKey: anonymous.secretKey!, serverKey: loggerKey)
        try waitUntil(timeout: 30, interval: 0.1, "the handler refusing the certificate without identity") {
            _ = try rawHealth(api) { try $0.secure(with: anonymousCredentials) }
            return (try system.adminClient(.sessionLogger).call(Ops.health, NoFields(), timeoutMilliseconds: 5000).counters["authRefused.no_identity"] ?? 0) >= 1
        }

        let stranger = try Certificate.generate(metadata: ["user-id": "alice"])  // claims an identity, but is not in clients/
        #expect(try !rawHealth(api) { _ in }, "a plaintext client was answered")
        #expect(try !rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: stranger.publicKey, secretKey: stranger.secretKey!, serverKey: loggerKey)) },
                "an unknown key was answered")
        let plannerKey = try keys.servicePublicKey(ServiceName.reminderPlanner.rawValue)
        #expect(try !rawHealth(api) { try $0.secure(with: CurveCredentials(publicKey: admin.publicKey, secretKey: admin.secretKey!, serverKey: plannerKey)) },
                "a client with the wrong server key was answered")
        #expect(try !rawHealth(api) { try $0.secure(with: anonymousCredentials) },
                "a certificate without identity was answered")

        // The refusals the ZAP handler saw are counted (plaintext and a wrong server key fail before it).
        let health = try system.adminClient(.sessionLogger).call(Ops.health, NoFields(), timeoutMilliseconds: 5000)
        #expect((health.counters["authRefused.unknown_key"] ?? 0) >= 1)
        #expect((health.counters["authRefused.no_identity"] ?? 0) >= 1)
        // lht says "no answer" (status 3) for an unknown key, and a usable key gets through.
        let strangerFile = temporaryDirectory("lht-stranger").appendingPathComponent("stranger")
        try stranger.write(basePath: strangerFile.path)
        let refused = try system.lht(["health", "session-logger", "--timeout", "1"], as: ["--cert", strangerFile.path + ".key_secret", "--server-keys", keys.path])
        #expect(refused.status == 3)
        #expect(try system.lht(["health", "session-logger"]).status == 0)
    }

    // MARK: Revocation

    @Test func aRevokedKeyIsRefusedOnANewConnectionWithinFiveSeconds() throws {
        let system = try LHTSystem(services: [.planner], keys: true)
        let carol = try system.addUser("carol")
        let open = try ClientsOf(system, carol.secret)
        #expect(try open.planner.call(Ops.userGet, UserRequest(userId: UserID("carol")!), timeoutMilliseconds: 5000).timeZone.description.isEmpty == false)

        let revoke = try runLHT(["keys", "revoke", "carol", "--keys", system.keys!.path])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(revoke.stdout.hasPrefix("revoked carol ("))
        let revokedAt = Date()
        // A new connection (a new lht process each time) is refused: no answer, status 3.
        var last = try system.lht(["user", "show", "--user", "carol", "--timeout", "0.5"], as: carol.flags)
        while last.status != 3 && Date().timeIntervalSince(revokedAt) < 8 {
            last = try system.lht(["user", "show", "--user", "carol", "--timeout", "0.5"], as: carol.flags)
        }
        #expect(last.status == 3, "\(last.stdout) \(last.stderr)")
        #expect(Date().timeIntervalSince(revokedAt) < 5.5, "the revoked key was let in for \(Date().timeIntervalSince(revokedAt)) s")
        // The connection that was open already: unauthorized, for every request.
        #expect(open.refusal(open.planner, Ops.userGet, UserRequest(userId: UserID("carol")!))?.code == .unauthorized)
        // And it stays out: a fresh connection some time later is refused too.
        Thread.sleep(forTimeInterval: 2.5)  // time passes: out to stay, not out once
        #expect(try system.lht(["user", "show", "--user", "carol", "--timeout", "1"], as: carol.flags).status == 3)
    }
}
