import Foundation
import Testing
@testable import LHTSchema

// `RecordID.nameBased(namespace:name:)`: RFC 9562 version 5 UUIDs, and the SHA-1 under them.

@Suite struct SHA1Tests {
    /// FIPS 180-2 appendix A vectors, and lengths around the padding boundary (55, 56, 64 bytes),
    /// with digests from Python's `hashlib.sha1`.
    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        (String(repeating: "a", count: 55), "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        (String(repeating: "a", count: 56), "c2db330f6083854c99d4b5bfb6e8f29f201be699"),
        (String(repeating: "a", count: 64), "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
    ])
    func digest(message: String, expected: String) {
        #expect(Self.hex(SHA1.digest(Array(message.utf8))) == expected, "\(message.utf8.count) bytes")
    }

    /// FIPS 180-2 A.3, a million "a": many blocks. Not an argument, so the log does not print it.
    @Test func millionAs() {
        #expect(Self.hex(SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}

@Suite struct NameBasedIDTests {
    static let dns = RecordID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
    static let url = RecordID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")!
    static let oid = RecordID("6ba7b812-9dad-11d1-80b4-00c04fd430c8")!
    /// The notifier's quick-action namespace (`ActionKey.namespace`).
    static let actions = RecordID("fe502641-2515-438d-97c9-71330c6ebe1c")!

    /// RFC 9562 appendix A.4: the DNS namespace and "www.example.com".
    @Test func rfc9562Example() {
        #expect(RecordID.nameBased(namespace: Self.dns, name: "www.example.com").description == "2ed6657d-e927-568b-95e1-2665a8aea6a2")
    }

    /// The same values as Python's `uuid.uuid5(namespace, name)` (which hashes the name as UTF-8).
    @Test(arguments: [
        (url, "https://example.com/" + String(repeating: "x", count: 100), "22c14796-0ac4-5a17-b266-1fe0c624900b"),
        (oid, "", "0a68eb57-c88a-5f34-9e9d-27f85e68af4f"),
        (dns, "grüße.example", "b7ef62df-d74e-5856-a4e5-c3ff9a38795d"),
        (actions, "a803a52d-c0f4-4c3a-96cc-0f8f9264a079@2026-11-23T08:00:00Z\nnoalc.steady", "c8f1bbbd-4f17-5d13-80c2-af9688066644"),
        (actions, String(repeating: "x", count: 200), "d99cdebe-515c-5390-9fdd-a234556d0b3c"),
    ])
    func matchesPython(namespace: RecordID, name: String, expected: String) {
        #expect(RecordID.nameBased(namespace: namespace, name: name).description == expected)
    }

    @Test func differsByNamespaceAndName() {
        let id = RecordID.nameBased(namespace: Self.actions, name: "n\na")
        #expect(id == RecordID.nameBased(namespace: Self.actions, name: "n\na"))
        #expect(id != RecordID.nameBased(namespace: Self.dns, name: "n\na"))
        #expect(id != RecordID.nameBased(namespace: Self.actions, name: "n\nb"))
    }
}
