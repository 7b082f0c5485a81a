import Foundation
import Testing
@testable import LHTSchema

/// The lean decoder (`WireJSON.decode`) must give exactly what Foundation's JSONDecoder gives: the
/// same value, or the same error once mapped to a `WireError`; and it must really take the usual frames.
@Suite("wire decoding matches JSONDecoder")
struct WireDecodingTests {
    /// Decodes `json` both ways; returns whether the lean pass took it.
    @discardableResult
    func same<Value: Decodable & Equatable>(_ type: Value.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let data = Data(json.utf8)
        let ours = Result { try WireJSON.decode(type, from: data) }.mapError { WireError(decoding: $0, under: "data") }
        let foundation = Result { try JSONDecoder().decode(type, from: data) }.mapError { WireError(decoding: $0, under: "data") }
        #expect(ours == foundation, "\(json)", sourceLocation: sourceLocation)
        return WireJSON.leanDecode(type, from: data) != nil
    }

    static let session = #"{"id":"3f2b8c1e-0000-4000-8000-000000000001","userId":"u1","activity":"workout","start":"2026-11-23T07:00:00Z","end":"2026-11-23T07:30:00.250Z","source":"watch 🌿"}"#

    @Test func usualRequestsTakeTheLeanPathWithFoundationsResult() {
        #expect(same(SessionLogRequest.self, Self.session))
        #expect(same(SessionLogRequest.self, #"{"userId":"u1","activity":"mindfulness","start":"2026-11-23T07:00:00Z","end":"2026-11-23T07:00:00Z","source":null}"#))
        #expect(same(NoAlcLogRequest.self, #" { "userId" : "u1" , "day":"2026-11-22","level":"easy" } "#))
        #expect(same(ReminderPutRequest.self, #"{"userId":"u1","activity":"noalc","time":"09:30","weekdays":["mon","sun"],"lookbackHours":12,"enabled":false,"title":"Wie war's?"}"#))
        #expect(same(EventsSinceRequest.self, #"{"after":0,"limit":1000}"#))
        #expect(same(EventsSinceRequest.self, #"{"after":null}"#))
        #expect(same(JSONValue.self, #"{"a":[1,-2.5e3,true,null,"x",{}],"b":{"c":[]}}"#))
        #expect(same([Int64].self, "[0,-0,9223372036854775807,-9223372036854775808]"))
    }

    /// A payload that reads its own members (`WireJSONReadable`), through the decoder a service
    /// registers for it, gives what `decodeRequestData` (`init(from:)`) gives, value or error; and
    /// it reads the usual requests itself rather than leaving them to `init(from:)`.
    @Test func payloadsThatReadTheirMembersMatchDecodable() {
        // As the generic code that serves an op calls it.
        func decode<Payload: RequestPayload>(_ frame: Data, _ head: RequestHead) throws(WireError) -> Payload {
            try Payload.read(from: frame, head: head)
        }
        /// Decodes `data` both ways; returns whether `init(members:)` took it.
        @discardableResult
        func same(_ data: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
            let frame = wireRequest(Ops.streakGet.name, data)
            guard let head = try? RequestHead(frame: frame) else {
                Issue.record("no head: \(data)", sourceLocation: sourceLocation)
                return false
            }
            let read = Result { () throws(WireError) -> StreakGetRequest in try decode(frame, head) }
            let decoded = Result { () throws(WireError) in try decodeRequestData(StreakGetRequest.self, from: frame, head: head) }
            #expect(read == decoded, "\(data)", sourceLocation: sourceLocation)
            return WireJSON.leanRead(StreakGetRequest.self, from: Data(data.utf8)) != nil
        }
        #expect(same(#"{"userId":"u1"}"#))
        #expect(same(#"{"userId":"u1","asOf":"2026-11-20","timeZone":"Europe/Berlin"}"#))
        #expect(same(#" { "timeZone" : null , "asOf":null,"userId":"u-2","extra":[1,{"userId":"u3"}]} "#))
        #expect(same(#"{"userId":"u1","userId":"u2","asOf":"2026-01-01","asOf":"x"}"#))
        // Everything else is left to init(from:), whose error the reply names.
        for data in [#"{}"#, "null", "[]", #""u1""#, #"{"userId":null}"#, #"{"userId":7}"#, #"{"userId":""}"#, #"{"userId":"u 1"}"#,
                     #"{"userId":"u1","asOf":"2026-02-30"}"#, #"{"userId":"u1","asOf":20261120}"#, #"{"userId":"u1","asOf":{}}"#,
                     #"{"userId":"u1","timeZone":"Mars/Olympus"}"#, #"{"userId":"u1","timeZone":""}"#, #"{"userId":"u\u0031"}"#] {
            #expect(!same(data), "\(data)")
        }
    }

    @Test func errorsAreFoundationsWithTheSameField() {
        #expect(!same(SessionLogRequest.self, #"{"userId":"u1","activity":"noalc","start":"2026-11-23T07:00:00Z","end":"2026-11-23T07:30:00Z"}"#))
        #expect(!same(SessionLogRequest.self, #"{"userId":"u1","activity":"workout","start":"2026-11-23T07:00:00Z"}"#))
        #expect(!same(SessionLogRequest.self, #"{"userId":"u1","activity":"workout","start":"2026-11-23T08:00:00Z","end":"2026-11-23T07:00:00Z"}"#))
        #expect(!same(SessionLogRequest.self, #"{"userId":7,"activity":"workout","start":"2026-11-23T07:00:00Z","end":"2026-11-23T07:30:00Z"}"#))
        #expect(!same(NoAlcLogRequest.self, #"{"userId":"u1","day":"1999-12-31","level":"easy"}"#))
        #expect(!same(ReminderPutRequest.self, #"{"userId":"u1","activity":"workout","weekdays":["mon","xyz"]}"#))
        #expect(!same(ReminderPutRequest.self, #"{"userId":"u1","activity":"workout","lookbackHours":1.5}"#))
        #expect(!same(EventsSinceRequest.self, "[]"))
    }

    /// What the lean pass does not read as Foundation does is left to Foundation, with its result.
    @Test func unusualSpellingsGoToFoundation() {
        #expect(!same(SessionLogRequest.self, Self.session.replacingOccurrences(of: "watch", with: #"w\"a\u00e4tch\n"#)))
        #expect(!same(EventsSinceRequest.self, #"{"after":1.0,"limit":1e2}"#))
        #expect(!same(EventsSinceRequest.self, #"{"after":99999999999999999999}"#))
        #expect(!same(JSONValue.self, "[1e400]"))
        #expect(!same(JSONValue.self, "{\"a\":\"\u{1}\"}"))
        #expect(!same(JSONValue.self, #"{"a":1,}"#))
        #expect(!same(JSONValue.self, #"[01]"#))
        #expect(!same(JSONValue.self, String(repeating: "[", count: 100) + String(repeating: "]", count: 100)))
    }

    /// A member is found by its whole name, past nested values whose members share its name.
    @Test func membersAreFoundPastNestedValuesByTheirWholeName() {
        struct Probe: Decodable, Equatable {
            let a: Int64
            let ab: String
            let last: [Int64]
            let missing: Bool?
        }
        let json = #"{"abc":{"a":[1,{"a":2}],"ab":"no"},"ab":"yes","skip":[[],{},[{"last":[9]}]],"a":7,"last":[3,-4]}"#
        #expect(same(Probe.self, json))
        #expect(WireJSON.leanDecode(Probe.self, from: Data(json.utf8)) == Probe(a: 7, ab: "yes", last: [3, -4], missing: nil))
    }

    /// Strings are scanned eight bytes at a time: a byte that needs a look is found wherever it
    /// falls in the string, at either end of a word or inside one.
    @Test func everyPositionOfAnUnusualByteInALongStringIsSeen() {
        for unusual in [#"\""#, #"\\"#, "\u{1}", "\u{1F}", "\u{7F}", "é", "🌿"] {
            for position in 0..<20 {
                let text = String(repeating: "a", count: position) + unusual + String(repeating: "b", count: 19 - position)
                // Valid characters are the lean path's to read; an escape or a control character is Foundation's.
                let lean = !unusual.hasPrefix("\\") && unusual.unicodeScalars.first!.value >= 0x20
                #expect(same(JSONValue.self, #"{"k":"\#(text)"}"#) == lean, "\(text.debugDescription)")
                #expect(same(JSONValue.self, #"["\#(text)",1]"#) == lean, "\(text.debugDescription)")
            }
        }
        // Bytes that are not UTF-8, wherever they fall, are Foundation's to refuse.
        for position in 0..<20 {
            let data = Data(#"[""#.utf8) + Data(repeating: UInt8(ascii: "a"), count: position) + Data([0xFF])
                + Data(repeating: UInt8(ascii: "b"), count: 19 - position) + Data(#""]"#.utf8)
            #expect(WireJSON.leanDecode(JSONValue.self, from: data) == nil, "0xFF at \(position)")
        }
        // Plain strings of every length take the lean path.
        for length in 0..<20 { #expect(same(JSONValue.self, #"["\#(String(repeating: "x", count: length))"]"#)) }
    }

    @Test func duplicateMembersReadTheFirstAsFoundationDoes() {
        #expect(same(NoAlcLogRequest.self, #"{"userId":"u1","day":"2026-11-22","level":"easy","level":"wild"}"#))
        #expect(WireJSON.leanDecode(NoAlcLogRequest.self, from: Data(#"{"userId":"u1","day":"2026-11-22","level":"easy","level":"wild"}"#.utf8))?.level == .easy)
    }

    @Test func aRequestWithTwoDataMembersIsReadFromTheFirst() throws {
        let frame = Data(#"{"v":1,"op":"noalc.log","data":{"userId":"u1","day":"2026-11-22","level":"easy"},"op":"x","data":{}}"#.utf8)
        let head = try RequestHead(frame: frame)
        #expect(head.op == "noalc.log")
        #expect(try decodeRequestData(NoAlcLogRequest.self, from: frame, head: head).level == .easy)
    }

    @Test func invalidUTF8IsLeftToFoundation() {
        let data = Data(#"{"userId":"u"#.utf8) + Data([0xC3, 0x28]) + Data(#"","day":"2026-11-22","level":"easy"}"#.utf8)
        #expect(WireJSON.leanDecode(NoAlcLogRequest.self, from: data) == nil)
        #expect(throws: (any Error).self) { try WireJSON.decode(NoAlcLogRequest.self, from: data) }
    }
}
