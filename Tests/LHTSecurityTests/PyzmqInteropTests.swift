import Foundation
import LHTSchema
import LHTSecurity
import Testing
import TestSupport
import ZeroMQ

enum Python {
    /// Runs `python3 -c script args…`; returns its exit status and standard output.
    static func run(_ script: String, _ arguments: [String] = []) throws -> (status: Int32, output: String) {
        let run = try start(script, arguments).finish()
        return (run.status, run.stdout)
    }

    static func start(_ script: String, _ arguments: [String]) throws -> CapturedProcess {
        try CapturedProcess("/usr/bin/env", ["python3", "-c", script] + arguments)
    }

    static let hasZMQ: Bool = (try? run("import zmq, zmq.auth").status) == 0
}

@Suite(.enabled(if: Python.hasZMQ, "skipped: `python3 -c 'import zmq'` fails (pyzmq not installed)"))
struct PyzmqInteropTests {
    @Test func pyzmqReadsOurCertificatePair() throws {
        let keys = try TemporaryKeys()
        let alice = try keys.addUser("alice")
        let script = """
        import sys, zmq.auth
        for path in sys.argv[1:]:
            public, secret = zmq.auth.load_certificate(path)
            print(public.decode(), (secret or b"-").decode())
        """
        let result = try Python.run(script, [keys.out + "/alice.key", keys.out + "/alice.key_secret"])
        #expect(result.status == 0)
        #expect(result.output == "\(alice.publicKey) -\n\(alice.publicKey) \(alice.secretKey!)\n")
    }

    @Test func weReadAPairPyzmqCreated() throws {
        let keys = try TemporaryKeys()
        let script = """
        import sys, zmq.auth
        public, secret = zmq.auth.create_certificates(sys.argv[1], "carol", metadata={"user-id": "carol"})
        print(zmq.auth.load_certificate(secret)[0].decode(), zmq.auth.load_certificate(secret)[1].decode())
        """
        let result = try Python.run(script, [keys.out])
        #expect(result.status == 0)
        let expected = result.output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        // pyzmq writes the secret file with the process umask; ours must be private to be read.
        chmod(keys.out + "/carol.key_secret", 0o600)
        let secret = try Certificate.loadSecret(keys.out + "/carol.key_secret")
        let publicPart = try Certificate.loadPublic(keys.out + "/carol.key")
        #expect([secret.publicKey, secret.secretKey!] == expected)
        #expect(publicPart.publicKey == secret.publicKey)
        // pyzmq writes the metadata into the secret file only; its public file names no identity, so
        // clients/ needs a public file with the metadata (ours, or one edited by hand).
        #expect(Principal(clientMetadata: secret.metadata) == .user(UserID("carol")!))
        #expect(publicPart.metadata.isEmpty)
    }

    @Test(.enabled(if: zmqHas("curve"), "libzmq built without CURVE"))
    func pyzmqCurveClientGetsAnAnswer() throws {
        let keys = try TemporaryKeys()
        try keys.addUser("alice")
        let server = try CurveServer(keys: keys.keys)
        let script = """
        import sys, zmq, zmq.auth
        cert, server_key, endpoint = sys.argv[1:]
        public, secret = zmq.auth.load_certificate(cert)
        server_public, _ = zmq.auth.load_certificate(server_key)
        ctx = zmq.Context()
        s = ctx.socket(zmq.REQ)
        s.linger = 0
        s.curve_publickey, s.curve_secretkey, s.curve_serverkey = public, secret, server_public
        s.connect(endpoint)
        s.send(b"from python")
        if s.poll(5000):
            print(s.recv().decode())
        else:
            print("no answer")
        """
        let process = try Python.start(script, [keys.out + "/alice.key_secret", keys.keys.servicesPath + "/session-logger.key", server.endpoint])
        let served = try server.serveOne(within: 10_000)
        let output = try process.finish().stdout
        #expect(served?.body == Data("from python".utf8))
        #expect(server.zap?.resolve(served?.userId) == .user(UserID("alice")!))
        #expect(output == "re: from python\n")
    }
}
