import Foundation
import Testing
import TestSupport
@testable import LHTSchema

// Fuzz-style tests with a fixed seed: random frames, pathological frames, and mutations of valid
// session.log / noalc.log requests go through RequestHead(frame:) and decodeRequestData exactly as a
// service runs them. Nothing may crash or hang; every failure is a WireError with a protocol code;
// every invalid_argument names a field rooted at `data` (or is `op` from the head); every accepted
// payload obeys the documented rules and survives a wire round trip.

@Suite("Fuzz", .serialized)
struct FuzzTests {
    @Test func randomByteStrings() {
        var random = SplitMix64(seed: 0x5EED_0001)
        var checker = InvariantChecker()
        let jsonish = Array(#"{}[]":,.-+0123456789eEtruefalsnvopdaz \ud800\\"#.utf8)
        let prefixes = [#"{"#, #"{"v":1,"#, #"{"v":1,"op":"session.log","data":"#, #"{"v":1,"op":"noalc.log","data":{"#, #"["#]
        for index in 0..<10_000 {
            let length = random.below(513)
            var bytes: [UInt8]
            switch index % 4 {
            case 0: bytes = random.bytes(length)
            case 1: bytes = (0..<length).map { _ in random.pick(jsonish) }
            case 2: bytes = Array(random.pick(prefixes).utf8) + (0..<length).map { _ in random.pick(jsonish) }
            default: bytes = Array(random.pick(prefixes).utf8) + random.bytes(length)
            }
            checker.check(Data(bytes), "random #\(index)")
        }
        checker.report()
    }

    static let structuredCases: [(String, Data)] = {
        var cases: [(String, Data)] = []
        let megabyte = 1 << 20
        func text(_ string: String) -> Data { Data(string.utf8) }
        let validData = #"{"userId":"henning","activity":"workout","start":"2026-11-23T17:00:00Z","end":"2026-11-23T18:00:00Z","day":"2026-11-23","level":"easy""#

        cases.append(("1 MB of [", Data(repeating: UInt8(ascii: "["), count: megabyte)))
        cases.append(("1 MB of {", Data(repeating: UInt8(ascii: "{"), count: megabyte)))
        var deepObject = Data(capacity: 600_000)
        for _ in 0..<100_000 { deepObject.append(contentsOf: #"{"a":"#.utf8) }
        cases.append(("100k-deep {\"a\": unterminated", deepObject))
        var closed = deepObject
        closed.append(contentsOf: "1".utf8)
        closed.append(Data(repeating: UInt8(ascii: "}"), count: 100_000))
        cases.append(("100k-deep {\"a\": closed", closed))
        var deepData = text(#"{"v":1,"op":"session.log","data":"#)
        for _ in 0..<100_000 { deepData.append(contentsOf: #"{"a":"#.utf8) }
        deepData.append(contentsOf: "1".utf8)
        deepData.append(Data(repeating: UInt8(ascii: "}"), count: 100_001))
        cases.append(("100k-deep nesting inside data", deepData))
        var deepArrayInField = text(#"{"v":1,"op":"session.log","data":{"userId":"#)
        deepArrayInField.append(Data(repeating: UInt8(ascii: "["), count: 100_000))
        deepArrayInField.append(Data(repeating: UInt8(ascii: "]"), count: 100_000))
        deepArrayInField.append(contentsOf: "}}".utf8)
        cases.append(("100k-deep array as userId", deepArrayInField))
        for depth in [500, 511, 512, 513, 1000] {
            let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            cases.append(("\(depth)-deep array in an unknown field", text(#"{"v":1,"op":"noalc.log","x":"# + nested + #","data":"# + validData + "}}")))
            cases.append(("\(depth)-deep array as source", text(#"{"v":1,"op":"noalc.log","data":"# + validData + #","source":"# + nested + "}}")))
        }

        let big = String(repeating: "x", count: megabyte)
        cases.append(("1 MB string in an unknown field", text(#"{"v":1,"op":"session.log","x":""# + big + #"","data":"# + validData + "}}")))
        cases.append(("1 MB string as source", text(#"{"v":1,"op":"session.log","data":"# + validData + #","source":""# + big + #""}}"#)))
        cases.append(("1 MB string as userId", text(#"{"v":1,"op":"session.log","data":{"userId":""# + big + #""}}"#)))
        cases.append(("1 MB string as op", text(#"{"v":1,"op":""# + big + #"","data":"# + validData + "}}")))
        cases.append(("1 MB key", text(#"{"v":1,"op":"session.log",""# + big + #"":1,"data":"# + validData + "}}")))
        cases.append(("1 MB of escapes", text(#"{"v":1,"op":"session.log","data":"# + validData + #","source":""# + String(repeating: #"\u00e9"#, count: megabyte / 6) + #""}}"#)))
        cases.append(("1 MB of spaces", text(String(repeating: " ", count: megabyte) + #"{"v":1,"op":"health"}"#)))
        let manyKeys = (0..<50_000).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        cases.append(("50k keys in data", text(#"{"v":1,"op":"session.log","data":{"# + manyKeys + "," + String(validData.dropFirst()) + "}}")))
        cases.append(("100k-element array in data", text(#"{"v":1,"op":"session.log","data":"# + validData + #","x":["# + Array(repeating: "0", count: 100_000).joined(separator: ",") + "]}}")))

        for number in ["1e400", "-1e400", "1e-400", "-0", "-0.0", "0e0", "1E+2", "100000000000000000000000000000", "1.0000000000000000001",
                       "NaN", "nan", "Infinity", "-Infinity", "inf", "0x1", ".5", "1.", "1e", "-", "--1", "01", "+1"] {
            cases.append(("v = \(number)", text(#"{"v":"# + number + #","op":"session.log","data":"# + validData + "}}")))
            cases.append(("number \(number) as userId", text(#"{"v":1,"op":"session.log","data":{"userId":"# + number + "}}")))
            cases.append(("number \(number) in an unknown field", text(#"{"v":1,"op":"noalc.log","x":"# + number + #","data":"# + validData + "}}")))
        }
        for string in [#""\ud800""#, #""\udc00""#, #""\ud800\ud800""#, #""\ud800x""#, #""\uDFFF""#, #""\ud800\u0041""#,
                       #""\u0000""#, #""\x41""#, #""\u12""#, #""\uZZZZ""#, #""\"#, #""\u""#] {
            cases.append(("string \(string) as op", text(#"{"v":1,"op":"# + string + #","data":"# + validData + "}}")))
            cases.append(("string \(string) as userId", text(#"{"v":1,"op":"session.log","data":{"userId":"# + string + #","activity":"workout"}}"#)))
            cases.append(("string \(string) as source", text(#"{"v":1,"op":"noalc.log","data":"# + validData + #","source":"# + string + "}}")))
            cases.append(("string \(string) in an unknown field", text(#"{"v":1,"op":"noalc.log","x":"# + string + #","data":"# + validData + "}}")))
            cases.append(("string \(string) as a key", text(#"{"v":1,"op":"noalc.log","data":"# + validData + "," + string + ":1}}")))
        }
        for bom in [[0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE], [0x00, 0x00, 0xFE, 0xFF]] as [[UInt8]] {
            cases.append(("BOM \(bom)", Data(bom) + text(#"{"v":1,"op":"noalc.log","data":"# + validData + "}}")))
        }
        // Accepted texts at the ends of the calendar whose UTC form leaves years 0001...9999.
        for (start, end) in [("9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59-23:59"), ("0001-01-01T00:00:00+00:01", "0001-01-01T00:30:00+00:01")] {
            cases.append(("session at \(start)", text(#"{"v":1,"op":"session.log","data":{"userId":"u1","activity":"workout","start":""# + start + #"","end":""# + end + #""}}"#)))
        }
        cases.append(("empty", Data()))
        cases.append(("NUL", Data([0])))
        cases.append(("{}", text("{}")))
        return cases
    }()

    @Test func structuredFrames() {
        var checker = InvariantChecker()
        for (label, bytes) in Self.structuredCases {
            checker.check(bytes, label)
        }
        checker.report()
    }

    @Test func mutationsOfValidRequests() {
        var random = SplitMix64(seed: 0x5EED_0002)
        var checker = InvariantChecker()
        // The unmutated bases are accepted by the payload they are for.
        for base in RawRequest.bases {
            let isSession = base.top.contains { $0.value.contains("session.log") }
            let error: WireError? = if isSession {
                pipeline(SessionLogRequest.self, base.bytes).failure
            } else {
                pipeline(NoAlcLogRequest.self, base.bytes).failure
            }
            #expect(error == nil, "base \(printable(base.bytes)) refused: \(String(describing: error))")
        }
        for index in 0..<10_000 {
            var request = random.pick(RawRequest.bases)
            var label = "mutation #\(index):"
            let valueRounds = random.chance(1, in: 2) ? 1 + random.below(3) : 0
            for _ in 0..<valueRounds { request.mutateValues(&random) }
            var bytes = Array(request.bytes)
            let byteRounds = valueRounds == 0 ? 1 + random.below(4) : (random.chance(2, in: 5) ? 1 + random.below(2) : 0)
            for _ in 0..<byteRounds { mutateBytes(&bytes, &random) }
            label += " \(valueRounds) value, \(byteRounds) byte"
            checker.check(Data(bytes), label)
        }
        checker.report()
        // The fuzz reaches the payload decoders and also gets past them.
        #expect(checker.accepted > 500, "\(checker.summary)")
        #expect((checker.codes[.invalidArgument] ?? 0) > 2_000, "\(checker.summary)")
    }
}
