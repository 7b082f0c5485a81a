import Foundation
import LHTSchema
import LHTSecurity
import Testing
import TestSupport
import ZeroMQ

/// A CURVE ROUTER with the ZAP handler, over TCP on 127.0.0.1; each test its own context and keys.
@Suite(.enabled(if: zmqHas("curve"), "libzmq built without CURVE"))
struct CurveServerTests {
    @Test func admittedUserGetsAReplyAndTheServerSeesItsPrincipal() throws {
        let keys = try TemporaryKeys()
        try keys.addUser("alice")
        let server = try CurveServer(keys: keys.keys)
        let answer = try #require(try server.ask(server.client(Certificate.loadSecret(keys.out + "/alice.key_secret"))))
        #expect(answer.principal == .user(UserID("alice")!))
        #expect(answer.reply == Data("re: ping".utf8))
    }

    @Test func peerAddressPropertyNamesTheClient() throws {
        let keys = try TemporaryKeys()
        let server = try CurveServer(keys: keys.keys)
        let client = try server.client(keys.keys.adminCertificate())
        try client.send(multipart: [Data(), Data("ping".utf8)])
        try #require(try Poller.readable([server.router], timeoutMilliseconds: 2000)[0])
        let (_, address) = try #require(try server.router.receiveMultipart(property: "Peer-Address"))
        #expect(address == "127.0.0.1")
    }

    @Test func serviceAndAdminKeysActAsAdmin() throws {
        let keys = try TemporaryKeys()
        let server = try CurveServer(keys: keys.keys)
        let planner = try server.ask(server.client(keys.keys.serviceCertificate("reminder-planner")))
        #expect(planner?.principal == .service("reminder-planner"))
        let admin = try server.ask(server.client(keys.keys.adminCertificate()))
        #expect(admin?.principal == .admin)
        #expect(admin?.principal?.isAdminEquivalent == true && planner?.principal?.isAdminEquivalent == true)
    }

    @Test func unknownKeyPlaintextWrongServerKeyAndNoIdentityGetNoAnswer() throws {
        let keys = try TemporaryKeys()
        // A certificate in clients/ that names no identity, and one that names two.
        let nobody = try Certificate.generate()
        try nobody.writePublic(to: keys.keys.clientsPath + "/nobody.key")
        let both = try Certificate.generate(metadata: ["user-id": "bob", "role": "admin"])
        try both.writePublic(to: keys.keys.clientsPath + "/both.key")
        let alice = try keys.addUser("alice")
        let server = try CurveServer(keys: keys.keys)

        #expect(try server.ask(server.client(Certificate.generate()), within: 700) == nil)
        #expect(try server.ask(server.client(nil), within: 700) == nil)
        let otherServer = try Certificate.generate()
        #expect(try server.ask(server.client(alice, serverKey: otherServer.publicKey), within: 700) == nil)
        #expect(try server.ask(server.client(nobody), within: 700) == nil)
        #expect(try server.ask(server.client(both), within: 700) == nil)

        // Only the key-carrying refusals reach ZAP: libzmq fails the other two in the handshake.
        let refusals = try #require(server.zap?.refusals)
        #expect(refusals[.unknownKey] == 1)
        #expect(refusals[.noIdentity] == 2)
        #expect(refusals[.notCurve] == 0)
        // Still serving the admitted.
        #expect(try server.ask(server.client(alice))?.principal == .user(UserID("alice")!))
    }

    /// The trap: without a ZAP handler libzmq admits any CURVE client. Start the handler first.
    @Test func curveServerWithoutZAPHandlerAdmitsAnyKey() throws {
        let keys = try TemporaryKeys()
        let server = try CurveServer(keys: keys.keys, withZAP: false)
        let stranger = try server.ask(server.client(Certificate.generate()))
        #expect(stranger?.reply == Data("re: ping".utf8))
        #expect(stranger?.userId == nil || stranger?.userId == "")
    }

    @Test func revokedKeyIsRefusedWithinFiveSecondsAndAddedKeyAdmitted() throws {
        let keys = try TemporaryKeys()
        let alice = try keys.addUser("alice")
        let server = try CurveServer(keys: keys.keys)
        let open = try server.client(alice)
        let before = try #require(try server.ask(open))
        #expect(before.principal == .user(UserID("alice")!))

        try keys.keys.revoke("alice")
        #expect(keys.keys.clients().map(\.name) == ["admin"])
        let start = Date()
        // The open connection stays, but its requests no longer resolve to a principal.
        try waitUntil(timeout: 5, "the revoked key resolving to no principal") { server.zap!.resolve(before.userId) == nil }
        let onOpen = try #require(try server.ask(open))
        #expect(onOpen.principal == nil)
        #expect(try server.ask(server.client(alice), within: 700) == nil)
        #expect(Date().timeIntervalSince(start) < 5)

        let bob = try keys.addUser("bob")
        try waitUntil(timeout: 5, "the added key admitted") { try server.ask(server.client(bob), within: 300)?.principal == .user(UserID("bob")!) }
    }

    @Test func handlerStopsWhenTheContextShutsDown() throws {
        let keys = try TemporaryKeys()
        let context = try Context()
        let handler = ZAPHandler(keys: keys.keys, logger: testLogger)
        try handler.start(on: context)
        // A second handler on the same context cannot bind.
        #expect(throws: ZMQError.self) { try ZAPHandler(keys: keys.keys, logger: testLogger).start(on: context) }
        context.shutdown()
        // The handler thread ends on ETERM by itself, before any stop(): the context's termination
        // waits for every socket, the handler's included, and is bounded, so a handler that missed
        // the shutdown fails this test instead of hanging it.
        #expect(context.terminate(waitingAtMost: 10_000), "the handler kept its socket open after the context's shutdown")
        // And stop() then returns at once, on a thread of its own for the same reason.
        let stopped = DispatchSemaphore(value: 0)
        Thread { handler.stop(); stopped.signal() }.start()
        #expect(stopped.wait(timeout: .now() + 5) == .success, "stop() did not return within 5 s of the context's shutdown")
    }
}
