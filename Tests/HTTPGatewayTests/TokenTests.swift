import Foundation
import LHTSchema
import LHTSecurity
import Testing
import TestSupport

/// Tokens as `lht tokens` writes them and the gateway reads them: only a SHA-256 on disk, 0600 in a 0700 directory.
@Suite struct TokenTests {
    let scratch = ScratchDirectory("lht-token-tests")

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex(Array("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex([UInt8](repeating: 0x61, count: 1000)) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func aTokenIsStoredOnlyAsItsHashPrivately() throws {
        let keys = try KeyDirectory.create(at: scratch.subdirectory("keys").path)
        let store = TokenStore(keys: keys)
        let first = try store.add(UserID("alice")!)
        let second = try store.add(UserID("alice")!, label: "phone")
        let third = try store.add(UserID("alice")!)
        #expect([first.label, second.label, third.label] == ["alice", "phone", "alice-2"])
        #expect(first.token.hasPrefix("lht_") && first.token.count == 47)
        #expect(first.token.dropFirst(4).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(Set([first.token, second.token, third.token]).count == 3)

        let file = store.path + "/alice.token"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!text.contains(first.token) && !text.contains(String(first.token.dropFirst(4))))
        #expect(text.contains(SHA256.hex(Array(first.token.utf8))))
        #expect(try mode(file) == 0o600)
        #expect(try mode(store.path) == 0o700)

        let entries = store.entries()
        #expect(entries.map(\.label) == ["alice", "alice-2", "phone"])
        #expect(TokenEntry.matching(second.token, in: entries)?.label == "phone")
        #expect(TokenEntry.matching(second.token + "x", in: entries) == nil)
        #expect(throws: TokenError.labelExists("phone")) { try store.add(UserID("bob")!, label: "phone") }

        try store.revoke("phone")
        #expect(TokenEntry.matching(second.token, in: store.entries()) == nil)
        #expect(throws: TokenError.noSuchToken("phone")) { try store.revoke("phone") }
        #expect(throws: KeyDirectoryError.invalidName("../clients/admin")) { try store.revoke("../clients/admin") }
    }

    @Test func aMalformedTokenFileLetsNobodyIn() throws {
        let keys = try KeyDirectory.create(at: scratch.subdirectory("keys").path)
        let store = TokenStore(keys: keys)
        _ = try store.add(UserID("alice")!)
        try "user-id = \"bob\"\nsha256 = \"short\"\n".write(toFile: store.path + "/broken.token", atomically: true, encoding: .utf8)
        try "user-id = \"no.dots\"\nsha256 = \"\(String(repeating: "0", count: 64))\"\n".write(toFile: store.path + "/baduser.token", atomically: true, encoding: .utf8)
        #expect(store.entries().map(\.label) == ["alice"])
    }

    @Test func keysInitUpgradeAddsOnlyTheMissingPairs() throws {
        let keys = try KeyDirectory.create(at: scratch.subdirectory("keys").path)
        #expect(FileManager.default.fileExists(atPath: keys.servicesPath + "/http-gateway.key_secret"))
        let logger = try keys.servicePublicKey("session-logger")
        unlink(keys.servicesPath + "/http-gateway.key_secret")
        unlink(keys.servicesPath + "/http-gateway.key")
        #expect(try keys.addMissingServicePairs() == ["http-gateway"])
        #expect(try keys.addMissingServicePairs() == [])
        #expect(try keys.servicePublicKey("session-logger") == logger)
        _ = try keys.serviceCertificate("http-gateway")
    }

    private func mode(_ path: String) throws -> Int {
        ((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
    }
}
