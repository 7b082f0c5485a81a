import Foundation
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// Finding: libzmq (4.3.4 here) hands a ZMQ_XPUB_MANUAL socket each subscription message with the
/// metadata of the connection it came from, so `zmq_msg_gets(msg, "User-Id")` names the ZAP-admitted
/// subscriber; and `subscribe(_:)` right after that receive grants the topic to that subscriber only.
@Suite(.enabled(if: zmqHas("curve"), "libzmq built without CURVE"))
struct XPubUserIdTests {
    @Test func subscriptionMessagesCarryTheUserIdAndAreGrantedPerSubscriber() throws {
        let keys = try TemporaryKeys()
        let alice = try keys.addUser("alice")
        let bob = try keys.addUser("bob")
        let server = try CurveServer(keys: keys.keys, type: .xpub)
        try server.router.setXPubManual(true)
        try server.router.setXPubVerboser(true)
        let xpub = server.router

        func subscriber(_ certificate: Certificate, _ topic: String) throws -> Socket {
            let sub = try Socket(server.context, .sub)
            try sub.setCurveKeys(publicKey: certificate.publicKey, secretKey: certificate.secretKey!)
            try sub.setCurveServerKey(server.serverCertificate.publicKey)
            try sub.subscribe(topic)
            try sub.connect(server.endpoint)
            return sub
        }
        // Both ask for alice's notifications; only alice's is honoured.
        let aliceSub = try subscriber(alice, "notify.alice.")
        let bobSub = try subscriber(bob, "notify.alice.")

        var seen: [Principal] = []
        for _ in 0..<2 {
            try #require(try Poller.readable([xpub], timeoutMilliseconds: 3000)[0])
            let (frames, userId) = try #require(try xpub.receiveMultipart(property: "User-Id"))
            let message = frames[0]
            #expect(message.first == 1)  // 1 = subscribe, then the topic
            let topic = message.dropFirst()
            #expect(String(decoding: topic, as: UTF8.self) == "notify.alice.")
            let principal = try #require(server.zap?.resolve(userId), "no User-Id on the subscription message")
            seen.append(principal)
            if principal == .user(UserID("alice")!) { try xpub.subscribe(Array(topic)) }
        }
        #expect(Set(seen) == [.user(UserID("alice")!), .user(UserID("bob")!)])

        try xpub.send(multipart: [Data("notify.alice.workout".utf8), Data("{}".utf8)])
        try aliceSub.setReceiveTimeout(milliseconds: 2000)
        #expect(try aliceSub.receiveMultipart()?.first == Data("notify.alice.workout".utf8))
        try bobSub.setReceiveTimeout(milliseconds: 500)
        #expect(try bobSub.receiveMultipart() == nil)
    }
}
