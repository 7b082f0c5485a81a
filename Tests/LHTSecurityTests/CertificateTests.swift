import Foundation
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

struct CertificateTests {
    @Test func z85RoundTripsAndRejectsStrangers() throws {
        let bytes = (0..<32).map { UInt8($0 * 7 % 256) }
        let text = try #require(Z85.encode(bytes))
        #expect(text.count == 40)
        #expect(Z85.decode(text) == bytes)
        #expect(Z85.encode([1, 2, 3]) == nil)
        #expect(Z85.decode("abcd") == nil)
        #expect(Z85.decode("abcd\"") == nil)
        // RFC 32's test vector.
        #expect(Z85.encode([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]) == "HelloWorld")
        let pair = try CurveKeyPair.generate()
        #expect(CurveKeyPair.publicKey(forSecretKey: pair.secretKey) == pair.publicKey)
    }

    @Test func readsQuotedAndUnquotedValues() throws {
        let keys = try TemporaryKeys()
        let pair = try CurveKeyPair.generate()
        let path = keys.root + "/x.key"
        try """
        #   a comment
        metadata
            user-id = alice
            role = 'admin'
            other = "x = y"
        curve
            public-key = "\(pair.publicKey)"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let certificate = try Certificate.loadPublic(path)
        #expect(certificate.publicKey == pair.publicKey && certificate.secretKey == nil)
        #expect(certificate.metadata == ["user-id": "alice", "role": "admin", "other": "x = y"])
        #expect(Principal(clientMetadata: certificate.metadata) == nil)  // both: no identity
        #expect(Principal(clientMetadata: ["user-id": "alice"]) == .user(UserID("alice")!))
        #expect(Principal(clientMetadata: ["role": "admin"]) == .admin)
        #expect(Principal(clientMetadata: ["user-id": "al ice"]) == nil)
        #expect(Principal(clientMetadata: ["role": "user"]) == nil)
    }

    @Test func secretFilesAre0600UnderUmask022AndAnOpenOneIsRefused() throws {
        let old = umask(0o022)
        defer { umask(old) }
        let keys = try TemporaryKeys()
        let alice = try keys.addUser("alice")
        for path in [keys.out + "/alice.key_secret", keys.out + "/alice.key", keys.keys.clientsPath + "/alice.key",
                     keys.keys.servicesPath + "/notifier.key_secret", keys.keys.path + "/admin.key_secret"] {
            #expect(try mode(path) == 0o600, "\(path)")
        }
        for path in [keys.keys.path, keys.keys.servicesPath, keys.keys.clientsPath] { #expect(try mode(path) == 0o700, "\(path)") }
        #expect(try Certificate.loadSecret(keys.out + "/alice.key_secret") == alice)

        chmod(keys.out + "/alice.key_secret", 0o644)
        #expect(throws: CertificateError.tooOpen(path: keys.out + "/alice.key_secret", mode: 0o644)) {
            try Certificate.loadSecret(keys.out + "/alice.key_secret")
        }
        chmod(keys.keys.servicesPath + "/notifier.key_secret", 0o640)
        #expect(throws: CertificateError.self) { try keys.keys.serviceCertificate("notifier") }
        let message = "\(CertificateError.tooOpen(path: "/k/a.key_secret", mode: 0o644))"
        #expect(message.contains("0") || message.contains("644"))
    }

    @Test func keyDirectoryListsAddsAndRevokes() throws {
        let keys = try TemporaryKeys()
        #expect(throws: KeyDirectoryError.alreadyExists(keys.keys.path)) { try KeyDirectory.create(at: keys.keys.path) }
        for name in KeyDirectory.serviceNames { _ = try keys.keys.serviceCertificate(name) }
        #expect(Set(keys.keys.servicePrincipals().values) == Set(KeyDirectory.serviceNames.map { Principal.service($0) }))
        let alice = try keys.addUser("alice")
        #expect(throws: KeyDirectoryError.clientExists("alice")) { try keys.addUser("alice") }
        let clients = keys.keys.clients()
        #expect(clients.map(\.name) == ["admin", "alice"])
        #expect(clients.map(\.principal) == [.admin, .user(UserID("alice")!)])
        #expect(clients[1].publicKey == alice.publicKey)
        #expect(try keys.keys.servicePublicKey("notifier") == keys.keys.serviceCertificate("notifier").publicKey)
        try keys.keys.revoke("alice")
        #expect(throws: KeyDirectoryError.noSuchClient("alice")) { try keys.keys.revoke("alice") }
        #expect(throws: KeyDirectoryError.invalidName("../x")) { try keys.keys.revoke("../x") }
    }

    private func mode(_ path: String) throws -> mode_t {
        var info = stat()
        try #require(stat(path, &info) == 0)
        return info.st_mode & 0o777
    }
}
