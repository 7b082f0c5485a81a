import Foundation
import Testing
import TestSupport
@testable import LHTSchema

@Suite("UserID and RecordID")
struct IdentifierTests {
    @Test(arguments: ["henning", "u1", "A", "Z9", "a_b-c", "UPPER_lower-123", String(repeating: "x", count: 64), "-", "_"])
    func validUserIDs(text: String) throws {
        let id = try #require(UserID(text))
        #expect(id.rawValue == text)
        #expect(id.description == text)
        #expect(String(decoding: try WireJSON.encode([id]), as: UTF8.self) == "[\"\(text)\"]")
    }

    @Test(arguments: [
        "", "a.b", "hen ning", " henning", "henning ", "j\u{FC}rgen", "ju\u{308}rgen", String(repeating: "x", count: 65),
        "a/b", "a\\b", "a:b", "a@b", "a+b", "a\u{0}", "a\n", "\u{0661}", "\u{FF41}", "\u{1F600}", "notify.u1",
        String(repeating: "\u{FC}", count: 32),
    ])
    func invalidUserIDs(text: String) {
        #expect(UserID(text) == nil, "\(text.debugDescription) was accepted")
    }

    @Test func recordIDsAcceptEitherCaseAndPrintLowerCase() throws {
        let upper = try #require(RecordID("3F2B8C1E-ABCD-4000-8000-0000000000FF"))
        let lower = try #require(RecordID("3f2b8c1e-abcd-4000-8000-0000000000ff"))
        let mixed = try #require(RecordID("3f2B8c1E-AbCd-4000-8000-0000000000fF"))
        #expect(upper == lower)
        #expect(mixed == lower)
        #expect(upper.hashValue == lower.hashValue)
        #expect(upper.description == "3f2b8c1e-abcd-4000-8000-0000000000ff")
        #expect(String(decoding: try WireJSON.encode([upper]), as: UTF8.self) == #"["3f2b8c1e-abcd-4000-8000-0000000000ff"]"#)
        #expect(try JSONDecoder().decode([RecordID].self, from: frame(#"["3F2B8C1E-ABCD-4000-8000-0000000000FF"]"#)) == [lower])
        let fresh = RecordID()
        #expect(fresh.description == fresh.description.lowercased())
        #expect(RecordID(fresh.description) == fresh)
    }

    /// The text is Foundation's `uuidString`, lower-cased, for every byte value at every position
    /// (each digit's letter-or-number decision is made eight at a time) and for random ids.
    @Test func recordIDTextIsFoundationsForEveryByteAtEveryPosition() {
        var random = SplitMix64(seed: 0x1D_7E47)
        var ids: [UUID] = [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))]
        for position in 0..<16 {
            for byte in 0...255 {
                var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: random.next()), count: 16)
                bytes[position] = UInt8(byte)
                ids.append(bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) })
            }
        }
        for _ in 0..<10_000 {
            ids.append(withUnsafeBytes(of: (random.next(), random.next())) { UUID(uuid: $0.load(as: uuid_t.self)) })
        }
        let wrong = ids.filter { RecordID($0).description != $0.uuidString.lowercased() }
        #expect(wrong.isEmpty, "\(wrong.prefix(3).map { ($0.uuidString, RecordID($0).description) })")
    }

    @Test(arguments: [
        "", "not-a-uuid", "3f2b8c1eabcd40008000000000000000ff", "3f2b8c1e-abcd-4000-8000-0000000000f",
        "3f2b8c1e-abcd-4000-8000-0000000000fff", "{3f2b8c1e-abcd-4000-8000-0000000000ff}", " 3f2b8c1e-abcd-4000-8000-0000000000f",
        "3f2b8c1e-abcd-4000-8000-0000000000ff ", "3g2b8c1e-abcd-4000-8000-0000000000ff", "3f2b8c1e_abcd_4000_8000_0000000000ff",
        "henning@2026-11-23T09:15:00Z",
        // Foundation's UUID(uuidString:) on Linux skips white space inside groups (and then misreads them).
        "\t3f2b8c1e-abcd-4000-8000-0000000000f", "3f2b8c1e- bcd-4000-8000-0000000000ff", "3f2b8c1e-abcd- 400-8000-0000000000ff",
        "3f2b8c1e-abcd-4000-8000- 000000000ff",
        // Bytes next to the digits' and letters' ranges, and a dash where a digit belongs.
        "3f2b8c1e-abcd-4000-8000-0000000000f:", "3f2b8c1e-abcd-4000-8000-0000000000f@", "3f2b8c1e-abcd-4000-8000-0000000000f`",
        "3f2b8c1e-abcd-4000-8000-0000000000fG", "3f2b8c1e-abcd-4000-8000-00000000-0ff",
    ])
    func invalidRecordIDs(text: String) {
        #expect(RecordID(text) == nil, "\(text.debugDescription) was accepted")
    }
}
