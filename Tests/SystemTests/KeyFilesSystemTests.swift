import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// PROTOCOL "Security" on disk and at start: binding without keys, private files and secrets, `lht keys`.
@Suite(.serialized) struct KeyFilesSystemTests {
    // MARK: Binding without keys

    @Test func withoutKeysANonLoopbackBindExitsTwoUnlessInsecure() throws {
        let data = temporaryDirectory("lht-bind")
        let refused = try runProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", data.path, "--api", "tcp://0.0.0.0:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*",
        ])
        #expect(refused.status == 2)
        #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("--api") && refused.stderr.contains("--keys") && refused.stderr.contains("--insecure"))
        let intake = try runProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", data.path, "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://*:*",
        ])
        #expect(intake.status == 2)
        #expect(intake.stderr.split(separator: "\n").count == 1, "\(intake.stderr)")

        // --insecure: it starts, and says so.
        let insecure = try userProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", data.path, "--api", "tcp://0.0.0.0:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*", "--insecure",
        ])
        defer { insecure.terminate() }
        try insecure.waitForOutput("ready session-logger ")
        // PROTOCOL: --insecure "logs a warning at start".
        try insecure.waitForError("warning", timeout: 2)

        // With keys a service may bind any address: CURVE protects it.
        let keys = try makeKeyDirectory()
        let keyed = try ServiceProcess("session-logger", arguments: ["--keys", keys.path, "--api", "tcp://0.0.0.0:*"])
        #expect(keyed.api.hasPrefix("tcp://0.0.0.0:"))
    }

    // MARK: Files

    @Test func dataDirectoryFilesAndSecretsArePrivateUnderUmask022() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let keys = try makeKeyDirectory()
        let data = temporaryDirectory("lht-modes").appendingPathComponent("nested/session-logger")
        let logger = try ServiceProcess("session-logger", dataDirectory: data, arguments: ["--keys", keys.path])
        let out = temporaryDirectory("lht-modes-out").appendingPathComponent("phone")
        let added = try runLHT(["keys", "add-user", "alice", "--out", out.path, "--keys", keys.path])
        #expect(added.status == 0, "\(added.stderr)")
        let alice = try Certificate.loadSecret(out.appendingPathComponent("alice.key_secret").path)
        let client = ServiceClient(context: try Context(), endpoint: logger.api, credentials: CurveCredentials(
            publicKey: alice.publicKey, secretKey: alice.secretKey!, serverKey: try KeyDirectory(keys.path).servicePublicKey("session-logger")))
        try waitUntil(timeout: 6, interval: 0.1, "alice let in") {
            (try? client.call(Ops.sessionLog, SessionLogRequest(userId: UserID("alice")!, activity: .workout, start: instant("2026-11-16T07:00:00Z"),
                                                                end: instant("2026-11-16T07:30:00Z")), timeoutMilliseconds: 500)) != nil
        }

        #expect(mode(data) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: data.path)
        // On PostgreSQL the directory holds no database files, and what it holds is private all the same.
        #expect(SystemTestBackend.isPostgreSQL || files.contains("session-logger.events") && files.contains("session-logger.projection.sqlite"), "\(files)")
        for file in files { #expect(mode(data.appendingPathComponent(file)) == 0o600, "\(file): \(String(mode(data.appendingPathComponent(file)), radix: 8))") }

        // The key directory: directories 0700, every file 0600; the pair add-user wrote too.
        for directory in [keys, keys.appendingPathComponent("services"), keys.appendingPathComponent("clients"), out] {
            #expect(mode(directory) == 0o700, "\(directory.path)")
        }
        var secrets = 0
        for directory in [keys, keys.appendingPathComponent("services"), keys.appendingPathComponent("clients"), out] {
            for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".key") || file.hasSuffix(".key_secret") {
                #expect(mode(directory.appendingPathComponent(file)) == 0o600, "\(directory.path)/\(file)")
                if file.hasSuffix(".key_secret") { secrets += 1 }
            }
        }
        #expect(secrets == 7)  // four services and the http-gateway, the admin, alice
    }

    @Test func aSecretReadableByGroupIsExitTwoWithOneLine() throws {
        let keys = try makeKeyDirectory()
        let secret = keys.appendingPathComponent("services/session-logger.key_secret")
        #expect(chmod(secret.path, 0o640) == 0)
        let run = try runProcess(BuildProducts.executable("session-logger"), [
            "--data-dir", temporaryDirectory("lht-open").path, "--keys", keys.path,
            "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*", "--intake", "tcp://127.0.0.1:*",
        ])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty, "it printed \(run.stdout)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.contains("chmod 600 \(secret.path)"))

        // lht refuses a --cert readable by others the same way.
        let out = temporaryDirectory("lht-open-cert")
        #expect(try runLHT(["keys", "add-user", "alice", "--out", out.path, "--keys", keys.path]).status == 0)
        let cert = out.appendingPathComponent("alice.key_secret")
        #expect(chmod(cert.path, 0o644) == 0)
        let lht = try runLHT(["health", "--cert", cert.path, "--server-keys", keys.path])
        #expect(lht.status == 2)
        #expect(lht.stderr.split(separator: "\n").count == 1, "\(lht.stderr)")
        #expect(lht.stderr.contains("chmod 600"))
    }

    // MARK: lht keys

    @Test func lhtKeysInitAddUserListAndRevoke() throws {
        let keys = try makeKeyDirectory()
        // init refuses a directory that is not empty, keys or not.
        #expect(try runLHT(["keys", "init", keys.path]).status == 2)
        let other = temporaryDirectory("lht-keys-other")
        #expect(FileManager.default.createFile(atPath: other.appendingPathComponent("notes.txt").path, contents: Data("x".utf8)))
        let refused = try runLHT(["keys", "init", other.path])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("not empty"))

        let out = temporaryDirectory("lht-keys-out")
        let added = try runLHT(["keys", "add-user", "alice", "--out", out.path, "--keys", keys.path])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("alice.key_secret"))
        let pair = try Certificate.loadSecret(out.appendingPathComponent("alice.key_secret").path)
        let published = try Certificate.loadPublic(keys.appendingPathComponent("clients/alice.key").path)
        #expect(published.publicKey == pair.publicKey && published.metadata["user-id"] == "alice")
        #expect(try Certificate.loadPublic(out.appendingPathComponent("alice.key").path).publicKey == pair.publicKey)
        // Twice: refused, the first pair kept.
        #expect(try runLHT(["keys", "add-user", "alice", "--out", temporaryDirectory("lht-keys-out2").path, "--keys", keys.path]).status == 2)
        #expect(try runLHT(["keys", "add-user", "not a user", "--keys", keys.path]).status == 2)
        #expect(try runLHT(["keys", "add-user", "alice", "--out", out.path]).status == 2)  // no --keys, no LHT_KEYS

        // A certificate without identity shows its problem.
        try Certificate.generate().writePublic(to: keys.appendingPathComponent("clients/mystery.key").path)
        let list = try runLHT(["keys", "list", "--keys", keys.path])
        #expect(list.status == 0)
        let lines = list.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("name") == true)
        #expect(lines.contains { $0.hasPrefix("admin ") && $0.contains(" admin ") })
        #expect(lines.contains { $0.hasPrefix("alice ") && $0.contains("user alice") && $0.contains(pair.fingerprint) })
        #expect(lines.contains { $0.hasPrefix("mystery ") && $0.contains("needs exactly one of") })
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(try runLHT(["keys", "list", "--json", "--keys", keys.path]).stdout.utf8))
        #expect(json["clients"]?.arrayValue.compactMap { $0["name"]?.stringValue } == ["admin", "alice", "mystery"])

        #expect(try runLHT(["keys", "revoke", "alice", "--keys", keys.path]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: keys.appendingPathComponent("clients/alice.key").path))
        #expect(try runLHT(["keys", "revoke", "alice", "--keys", keys.path]).status == 2)
        #expect(try runLHT(["keys", "revoke", "../services/notifier", "--keys", keys.path]).status == 2)
        #expect(FileManager.default.fileExists(atPath: keys.appendingPathComponent("services/notifier.key").path))
    }
}
