import Foundation
import Testing
@testable import LHTSchema

@Suite("version, op and bad_json")
struct RequestHeadTests {
    @Test(arguments: [
        #"{"op":"session.log","data":{}}"#, #"{"v":"1","op":"session.log"}"#, #"{"v":2,"op":"session.log"}"#,
        #"{"v":0,"op":"health"}"#, #"{"v":-1,"op":"health"}"#, #"{"v":null,"op":"health"}"#, #"{"v":true,"op":"health"}"#,
        #"{"v":1.5,"op":"health"}"#, #"{"v":[1],"op":"health"}"#, #"{"v":{},"op":"health"}"#,
        #"{"V":1,"op":"health"}"#, "{}", #"{"op":5}"#,
    ])
    func unsupportedVersion(json: String) {
        expectHeadError(frame(json), .unsupportedVersion)
    }

    @Test(arguments: [
        #"{"v":1}"#, #"{"v":1,"op":5}"#, #"{"v":1,"op":null}"#, #"{"v":1,"op":["session.log"]}"#, #"{"v":1,"op":{}}"#,
        #"{"v":1,"op":true}"#, #"{"v":1,"Op":"health"}"#, #"{"v":1,"data":{"op":"health"}}"#,
    ])
    func missingOrNonStringOp(json: String) {
        expectHeadError(frame(json), .invalidArgument, field: "op")
    }

    /// 1e400 is JSON syntax but beyond any double: bad_json (a reader's range limit) or unsupported_version.
    @Test func versionBeyondDoubleRange() {
        switch pipeline(NoFields.self, frame(#"{"v":1e400,"op":"health"}"#)) {
        case .success: Issue.record("accepted")
        case .failure(let error): #expect([.badJSON, .unsupportedVersion].contains(error.code), "\(error)")
        }
    }

    @Test func versionIsCheckedBeforeOp() {
        expectHeadError(frame(#"{"v":2,"op":5}"#), .unsupportedVersion)
    }

    static let notJSON: [(String, [UInt8])] = [
        ("empty frame", []),
        ("whitespace", Array(" \n\t".utf8)),
        ("prose", Array("not json".utf8)),
        ("JSON array", Array("[]".utf8)),
        ("JSON array of a request", Array(#"[{"v":1,"op":"health"}]"#.utf8)),
        ("JSON string", Array(#""{\"v\":1}""#.utf8)),
        ("JSON number", Array("1".utf8)),
        ("JSON null", Array("null".utf8)),
        ("JSON true", Array("true".utf8)),
        ("unterminated object", Array(#"{"v":1,"op":"health""#.utf8)),
        ("unterminated string", Array(#"{"v":1,"op":"health}"#.utf8)),
        ("two objects", Array(#"{"v":1,"op":"health"}{}"#.utf8)),
        ("trailing junk", Array(#"{"v":1,"op":"health"} x"#.utf8)),
        ("single quotes", Array("{'v':1,'op':'health'}".utf8)),
        ("bare keys", Array("{v:1,op:\"health\"}".utf8)),
        ("comment", Array("{\"v\":1,/* c */\"op\":\"health\"}".utf8)),
        ("NaN", Array(#"{"v":1,"op":"health","x":NaN}"#.utf8)),
        ("Infinity", Array(#"{"v":1,"op":"health","x":-Infinity}"#.utf8)),
        ("plus sign", Array(#"{"v":+1,"op":"health"}"#.utf8)),
        ("bytes ff fe", [0xFF, 0xFE]),
        ("byte ff", [0xFF]),
        ("bytes fe ff", [0xFE, 0xFF]),
        ("NUL", [0x00]),
    ]

    @Test(arguments: notJSON)
    func badJSON(name: String, bytes: [UInt8]) {
        expectHeadError(Data(bytes), .badJSON)
        if case .failure(let error) = headResult(Data(bytes)) {
            #expect(error.code == .badJSON)
            #expect(error.field == nil)
        }
    }

    /// Frames that JSONDecoder reads leniently but that are not JSON text (RFC 8259): the protocol says bad_json.
    static let lenientlyReadNotJSON: [(String, [UInt8])] = [
        ("raw newline inside op", Array("{\"v\":1,\"op\":\"health\nx\"}".utf8)),
        ("raw tab inside an ignored string", Array("{\"v\":1,\"op\":\"health\",\"x\":\"a\tb\"}".utf8)),
        ("leading zero in v", Array(#"{"v":01,"op":"health"}"#.utf8)),
        ("raw control character inside data.source", Array(("{\"v\":1,\"op\":\"session.log\",\"data\":" + sessionLogData(["source": "\"a\u{1}b\""]) + "}").utf8)),
    ]

    @Test(arguments: lenientlyReadNotJSON)
    func badJSONThatJSONDecoderReadsLazily(name: String, bytes: [UInt8]) {
        switch pipeline(SessionLogRequest.self, Data(bytes)) {
        case .success(let value): Issue.record("accepted as \(value)")
        case .failure(let error): #expect(error.code == .badJSON, "\(error)")
        }
    }

    /// PROTOCOL.md: "the frame is ... not UTF-8" → bad_json, wherever the offending bytes are.
    static let notUTF8: [(String, [UInt8])] = {
        func splice(_ before: String, _ bytes: [UInt8], _ after: String) -> [UInt8] {
            Array(before.utf8) + bytes + Array(after.utf8)
        }
        let restOfSession = #"","userId":"henning","activity":"workout","start":"2026-11-23T17:00:00Z","end":"2026-11-23T18:00:00Z"}}"#
        let utf16Text = #"{"v":1,"op":"health","data":{}}"#
        return [
            ("0xff inside an unknown field", splice(#"{"v":1,"op":"health","x":""#, [0xFF], #""}"#)),
            ("0xff inside op", splice(#"{"v":1,"op":"heal"#, [0xFF], #"th"}"#)),
            ("0xff inside data.source", splice(#"{"v":1,"op":"session.log","data":{"source":""#, [0xFF], restOfSession)),
            ("Latin-1 umlaut inside data.userId", splice(#"{"v":1,"op":"session.log","data":{"source":"x","userId":"j"#, [0xFC], #"rgen","activity":"workout","start":"2026-11-23T17:00:00Z","end":"2026-11-23T18:00:00Z"}}"#)),
            ("truncated sequence inside data.source", splice(#"{"v":1,"op":"session.log","data":{"source":""#, [0xC3, 0x28], restOfSession)),
            ("overlong slash inside an unknown field", splice(#"{"v":1,"op":"health","x":""#, [0xC0, 0xAF], #""}"#)),
            ("encoded surrogate inside an unknown field", splice(#"{"v":1,"op":"health","x":""#, [0xED, 0xA0, 0x80], #""}"#)),
            ("0xff outside any string", splice(#"{"v":1,"op":"health"}"#, [0xFF], "")),
            ("UTF-16LE with BOM", [0xFF, 0xFE] + Array(utf16Text.data(using: .utf16LittleEndian)!)),
            ("UTF-16BE without BOM", Array(utf16Text.data(using: .utf16BigEndian)!)),
            ("UTF-16LE without BOM", Array(utf16Text.data(using: .utf16LittleEndian)!)),
            ("UTF-32LE", Array(utf16Text.data(using: .utf32LittleEndian)!)),
        ]
    }()

    @Test(arguments: notUTF8)
    func notUTF8IsBadJSON(name: String, bytes: [UInt8]) {
        switch pipeline(NoFields.self, Data(bytes)) {
        case .success: Issue.record("accepted \(printable(Data(bytes)))")
        case .failure(let error): #expect(error.code == .badJSON, "\(error)")
        }
        switch pipeline(SessionLogRequest.self, Data(bytes)) {
        case .success(let value): Issue.record("accepted as \(value)")
        case .failure(let error): #expect(error.code == .badJSON, "\(error)")
        }
    }

    /// `\ud800` is valid JSON syntax but names no character. Either answer is fine, as long as it is
    /// bad_json or names the field it sits in — never an empty field path.
    @Test func loneSurrogateEscapes() {
        let inSource = wireRequest("session.log", sessionLogData(["source": #""\ud800""#]))
        switch pipeline(SessionLogRequest.self, inSource) {
        case .success(let value): Issue.record("accepted \(value)")
        case .failure(let error):
            #expect(error.code == .badJSON || (error.code == .invalidArgument && error.field == "data.source"), "\(error)")
        }
        let inUserID = wireRequest("session.log", sessionLogData(["userId": #""a\udc00""#]))
        switch pipeline(SessionLogRequest.self, inUserID) {
        case .success(let value): Issue.record("accepted \(value)")
        case .failure(let error):
            #expect(error.code == .badJSON || (error.code == .invalidArgument && error.field == "data.userId"), "\(error)")
        }
        switch pipeline(NoFields.self, frame(#"{"v":1,"op":"\ud800"}"#)) {
        case .success: Issue.record("accepted")
        case .failure(let error):
            #expect(error.code == .badJSON || (error.code == .invalidArgument && error.field == "op"), "\(error)")
        }
    }

    @Test func aUTF8ByteOrderMarkIsStillUTF8() throws {
        let bytes = Data([0xEF, 0xBB, 0xBF]) + frame(#"{"v":1,"op":"health"}"#)
        switch pipeline(NoFields.self, bytes) {
        case .success: break
        case .failure(let error): #expect(error.code == .badJSON, "\(error)")
        }
    }

    @Test func unicodeInStringsIsFine() throws {
        let data = sessionLogData(["source": #""Uhr \u00fc \ud83d\ude00 ü 😀""#])
        let value = try pipeline(SessionLogRequest.self, wireRequest("session.log", data)).get()
        #expect(value.source == "Uhr \u{FC} \u{1F600} \u{FC} \u{1F600}")
    }
}
