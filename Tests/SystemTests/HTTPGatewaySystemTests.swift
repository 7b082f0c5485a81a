import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing

/// PROTOCOL "HTTP gateway" against the real executables: the four services with keys, the gateway
/// in front with its own service pair, tokens made by the real `lht tokens`, curl as the client.
@Suite(.serialized) struct HTTPGatewaySystemTests {
    static let session = #"{"activity":"mindfulness","start":"2026-11-20T10:00:00Z","end":"2026-11-20T10:10:00Z"}"#

    @Test func everyStatusCodeWithTokens() throws {
        let rig = try GatewayRig(services: [.planner], keys: true)
        let alice = try rig.addToken("alice"), bob = try rig.addToken("bob")

        // 401 with WWW-Authenticate: no token, an unknown one, a malformed header.
        for token in [nil, "lht_unknown", ""] as [String?] {
            let refused = try rig.post("session.log", Self.session, token: token)
            #expect(refused.status == 401 && refused.header("WWW-Authenticate") == "Bearer" && refused.errorCode == "unauthorized")
        }
        // 200: the body without userId acts for the token's user, who then finds it.
        let logged = try rig.post("session.log", Self.session, token: alice)
        #expect(logged.status == 200, "\(logged.body)")
        let id = try #require(logged.data["id"] as? String)
        let list = try rig.post("session.list", #"{"from":"2026-11-20T00:00:00Z","until":"2026-11-21T00:00:00Z"}"#, token: alice)
        #expect((list.data["sessions"] as? [[String: Any]])?.first?["userId"] as? String == "alice")
        // 403: a body naming another user.
        let other = try rig.post("session.list", #"{"userId":"alice","from":"2026-11-20T00:00:00Z","until":"2026-11-21T00:00:00Z"}"#, token: bob)
        #expect(other.status == 403 && other.errorCode == "unauthorized")
        // 409: bob reusing alice's id; 404: an unknown op and an unknown id; 400: not JSON, a bad field.
        let conflict = try rig.post("session.log", #"{"id":"\#(id)","activity":"workout","start":"2026-11-20T10:00:00Z","end":"2026-11-20T10:10:00Z"}"#, token: bob)
        #expect(conflict.status == 409 && conflict.errorCode == "conflict")
        #expect(try rig.post("session.nope", "{}", token: alice).status == 404)
        #expect(try rig.post("events.since", "{}", token: alice).status == 404)
        let missing = try rig.post("reminder.get", #"{"id":"\#(UUID().uuidString)"}"#, token: alice)
        #expect(missing.status == 404 && missing.errorCode == "not_found")
        #expect(try rig.post("session.log", "{not json", token: alice).status == 400)
        let invalid = try rig.post("session.log", #"{"activity":"sleeping"}"#, token: alice)
        #expect(invalid.status == 400 && invalid.errorCode == "invalid_argument")
        // 413 over 1 MiB, 415 for another content type, both with an error body.
        let large = try rig.request("/v1/session.log", body: Data(#"{"title":""#.utf8) + Data(repeating: 0x61, count: 1 << 20) + Data(#""}"#.utf8), token: alice)
        #expect(large.status == 413 && large.errorCode == "invalid_argument")
        let text = try rig.request("/v1/session.log", body: Data(Self.session.utf8), token: alice, contentType: "text/plain")
        #expect(text.status == 415 && text.errorCode == "invalid_argument")
        // 503 with Retry-After: the streak service is not running (no answer within 5 s); /healthz names it.
        let unavailable = try rig.post("streak.get", "{}", token: alice)
        #expect(unavailable.status == 503 && unavailable.header("Retry-After") != nil && unavailable.errorCode == "unavailable")
        let health = try rig.request("/healthz")
        #expect(health.status == 503 && health.body.contains(#""noalc-streak":"no answer""#) && health.body.contains(#""session-logger":"ok""#))
    }

    @Test func aRevokedTokenIsRefusedWithinFiveSeconds() throws {
        let rig = try GatewayRig(services: [.planner], keys: true)
        let token = try rig.addToken("alice", label: "phone")  // taken within 5 s (addToken waits for it)
        let list = try runLHT(["tokens", "list", "--keys", rig.system.keys!.path])
        #expect(list.stdout.contains("phone") && list.stdout.contains("alice") && !list.stdout.contains(token))
        #expect(try runLHT(["tokens", "revoke", "phone", "--keys", rig.system.keys!.path]).status == 0)
        let revoked = Date()
        var status = 200
        while status != 401, Date().timeIntervalSince(revoked) < 6 { status = try rig.post("user.get", "{}", token: token).status }
        #expect(status == 401)
        #expect(Date().timeIntervalSince(revoked) < 5)
        // No token reaches the gateway's log.
        #expect(!rig.gateway.errors.contains(token))
    }

    @Test func atMostEightStreamsPerToken() throws {
        // Keepalives far apart: a freed slot cannot come from a failed keepalive write.
        let rig = try GatewayRig(services: [.planner, .notifier], keys: true, gatewayArguments: ["--keepalive-seconds", "300"])
        let token = try rig.addToken("alice")
        let streams = try (0..<8).map { _ in try rig.stream("?types=notify", token: token) }
        for stream in streams { try stream.waitUntil("the stream opened") { stream.output.contains("id: ") } }
        let ninth = try rig.request("/v1/events?types=notify", token: token)
        #expect(ninth.status == 429)
        // Another token has streams of its own; an unknown type is 400.
        let other = try rig.addToken("alice", label: "laptop")
        #expect(try rig.request("/v1/events?types=bogus", token: other).status == 400)
        // A reader that hangs up frees its slot at once: the gateway sees the connection close.
        streams[0].terminate()
        let hungUp = Date()
        var status = 429
        while status == 429, Date().timeIntervalSince(hungUp) < 5 {
            status = try rig.request("/v1/events?types=notify", token: token, curlArguments: ["--max-time", "1"]).status
        }
        #expect(status == 200)
        #expect(Date().timeIntervalSince(hungUp) < 2.5, "the slot was freed only after \(Date().timeIntervalSince(hungUp)) s")
        for stream in streams { stream.terminate() }
    }

    @Test func tlsWithASelfSignedCertificateAndTheNonLoopbackRefusal() throws {
        let directory = temporaryDirectory("lht-gateway-tls")
        let cert = directory.appendingPathComponent("cert.pem").path, key = directory.appendingPathComponent("key.pem").path
        let made = try runProcess(URL(fileURLWithPath: "/usr/bin/openssl"), [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        #expect(made.status == 0, "\(made.stderr)")
        let rig = try GatewayRig(services: [.planner], keys: true, gatewayArguments: ["--tls-cert", cert, "--tls-key", key])
        #expect(rig.scheme == "https")
        let token = try rig.addToken("alice", curlArguments: ["--cacert", cert])
        let logged = try rig.request("/v1/session.log", body: Data(Self.session.utf8), token: token, curlArguments: ["--cacert", cert])
        #expect(logged.status == 200, "\(logged.body)")
        // Plain HTTP to the TLS port gets no HTTP answer.
        let plain = try runProcess(URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                                                                          "http://\(rig.address)/healthz"])
        #expect(plain.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "000")

        // Another machine's reach without TLS (or without keys) is a start-up error, exit 2; --insecure allows it.
        let gateway = BuildProducts.executable("http-gateway")
        let keys = rig.system.keys!.path
        for arguments in [["--http", "0.0.0.0:0", "--keys", keys], ["--http", "0.0.0.0:0"], ["--http", "[::]:0", "--keys", keys]] {
            let refused = try runProcess(gateway, arguments + ["--metrics", "off"])
            #expect(refused.status == 2 && refused.stderr.hasPrefix("error: --http"), "\(arguments): \(refused.stderr)")
        }
        let insecure = try userProcess(gateway, ["--http", "0.0.0.0:0", "--insecure", "--metrics", "off"])
        try insecure.waitForOutput("ready http-gateway http=0.0.0.0:")
        #expect(insecure.terminate() == 0)
    }

    @Test func withoutKeysARequestActsForTheUserItNames() throws {
        let rig = try GatewayRig(services: [.planner], keys: false)
        let logged = try rig.post("session.log", #"{"userId":"alice","activity":"workout","start":"2026-11-20T10:00:00Z","end":"2026-11-20T10:10:00Z"}"#)
        #expect(logged.status == 200, "\(logged.body)")
        let id = try #require(logged.data["id"] as? String)
        // The same rules as for a user: bob's request for alice's record id is a conflict; `as` is bob's.
        let conflict = try rig.post("session.log", #"{"userId":"bob","id":"\#(id)","activity":"workout","start":"2026-11-20T10:00:00Z","end":"2026-11-20T10:10:00Z"}"#)
        #expect(conflict.status == 409)
        #expect(try rig.request("/healthz").status == 503)  // notifier and streak service are not running
        #expect(try rig.request("/v1/events?types=session.logged").status == 400)  // a stream names its user
    }
}
