import Foundation
import Testing
import TestSupport
@testable import LHTSchema

// Fuzz-style tests with a fixed seed: random frames, pathological frames, and mutations of valid
// session.log / noalc.log requests go through RequestHead(frame:) and decodeRequestData exactly as a
// service runs them. Nothing may crash or hang; every failure is a WireError with a protocol code;
// every invalid_argument names a field rooted at `data` (or is `op` from the head); every accepted
// payload obeys the documented rules and survives a wire round trip.

/// Checks the pipeline's invariants on one frame and tallies what happened.
struct InvariantChecker {
    /// Violations grouped by kind: a count and the first examples of each.
    private(set) var violations: [String: (count: Int, examples: [String])] = [:]
    var violationCount: Int { violations.values.reduce(0) { $0 + $1.count } }
    private(set) var frames = 0
    private(set) var accepted = 0
    private(set) var codes: [ErrorCode: Int] = [:]
    private(set) var slowest: (seconds: Double, label: String) = (0, "")

    mutating func check(_ frame: Data, _ label: String) {
        frames += 1
        let started = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            if seconds > slowest.seconds { slowest = (seconds, label) }
            if seconds > 2 { violation("slow frame", frame, label, "took \(seconds) s") }
        }
        let head: RequestHead
        switch headResult(frame) {
        case .failure(let error):
            verify(error, frame, label, allowed: [.badJSON, .unsupportedVersion, .invalidArgument], fieldOK: { $0 == "op" })
            if error.code == .badJSON || error.code == .unsupportedVersion, error.field != nil && error.field != "v" {
                violation("head error with a field", frame, label, "\(error.code.rawValue) with field \(error.field!)")
            }
            return
        case .success(let value):
            head = value
        }
        do {
            let value = try decodeRequestData(SessionLogRequest.self, from: frame, head: head)
            accepted += 1
            verifyAccepted(value, frame, label)
        } catch {
            verify(error, frame, label + " (session.log)", allowed: [.invalidArgument, .badJSON], fieldOK: Self.isDataPath)
        }
        do {
            let value = try decodeRequestData(NoAlcLogRequest.self, from: frame, head: head)
            accepted += 1
            verifyAccepted(value, frame, label)
        } catch {
            verify(error, frame, label + " (noalc.log)", allowed: [.invalidArgument, .badJSON], fieldOK: Self.isDataPath)
        }
    }

    /// `data` itself (when it is not an object) or a path below it.
    static func isDataPath(_ field: String) -> Bool { field == "data" || field.hasPrefix("data.") && field.count > 5 }

    private mutating func verify(_ error: WireError, _ frame: Data, _ label: String, allowed: Set<ErrorCode>, fieldOK: (String) -> Bool) {
        codes[error.code, default: 0] += 1
        if !ErrorCode.allCases.contains(error.code) || !allowed.contains(error.code) {
            violation("unexpected code \(error.code.rawValue)", frame, label, "\(error)")
        }
        if error.message.isEmpty { violation("empty message", frame, label, "\(error)") }
        if error.code == .invalidArgument {
            if let field = error.field {
                if !fieldOK(field) { violation("invalid_argument field \(field.isEmpty ? "is empty" : "not rooted at data or op")", frame, label, "field \(field.debugDescription): \(error)") }
            } else {
                violation("invalid_argument without a field", frame, label, "\(error)")
            }
        }
        // The failure reply is well-formed and carries the same error.
        let reply = Reply.failure(error)
        if (try? JSONDecoder().decode(ReplyFrame<NoFields>.self, from: reply))?.error != error {
            violation("failure reply does not round-trip", frame, label, printable(reply))
        }
    }

    private mutating func verifyAccepted(_ value: SessionLogRequest, _ frame: Data, _ label: String) {
        if !value.activity.isSession { violation("accepted a noalc session", frame, label, "\(value)") }
        if value.end < value.start { violation("accepted end before start", frame, label, "\(value)") }
        if value.end.milliseconds(since: value.start) > 24 * 3600 * 1000 { violation("accepted more than 24 h", frame, label, "\(value)") }
        if UserID(value.userId.rawValue) == nil { violation("accepted a bad userId", frame, label, value.userId.rawValue.debugDescription) }
        roundTrip(value, "session.log", frame, label)
    }

    private mutating func verifyAccepted(_ value: NoAlcLogRequest, _ frame: Data, _ label: String) {
        if UserID(value.userId.rawValue) == nil { violation("accepted a bad userId", frame, label, value.userId.rawValue.debugDescription) }
        if LocalDay(value.day.description) != value.day { violation("accepted a bad day", frame, label, "\(value.day)") }
        roundTrip(value, "noalc.log", frame, label)
    }

    private mutating func roundTrip<Payload: Codable & Equatable>(_ value: Payload, _ op: String, _ frame: Data, _ label: String) {
        guard let resent = try? wireEncoder().encode(RequestFrame(op: op, data: value)) else {
            violation("accepted value does not encode", frame, label, "\(value)")
            return
        }
        switch pipeline(Payload.self, resent) {
        case .success(let again):
            if again != value { violation("wire round trip changes the value", frame, label, "\(value) became \(again)") }
        case .failure(let error):
            violation("accepted value re-encodes into a refused request", frame, label, "\(printable(resent)): \(error)")
        }
    }

    private mutating func violation(_ kind: String, _ frame: Data, _ label: String, _ detail: String) {
        var entry = violations[kind] ?? (0, [])
        entry.count += 1
        if entry.examples.count < 3 { entry.examples.append("[\(label)] \(detail)\n      frame: \(printable(frame, limit: 240))") }
        violations[kind] = entry
    }

    var summary: String {
        let tally = codes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " ")
        return "\(frames) frames, \(accepted) payloads accepted, \(tally); slowest \(slowest.seconds) s (\(slowest.label))"
    }

    func report(sourceLocation: SourceLocation = #_sourceLocation) {
        let text = violations.sorted { $0.key < $1.key }.map { kind, entry in
            "● \(kind): \(entry.count)×\n    " + entry.examples.joined(separator: "\n    ")
        }.joined(separator: "\n")
        #expect(violationCount == 0, "\(violationCount) violations\n\(text)\n\(summary)", sourceLocation: sourceLocation)
    }
}

/// A request as an ordered list of raw JSON fields, so that values can be swapped for any JSON text.
struct RawRequest {
    var top: [(key: String, value: String)]
    var data: [(key: String, value: String)]?

    var bytes: Data {
        var fields = top
        if let data { fields.append(("data", "{" + data.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}")) }
        return Data(("{" + fields.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}").utf8)
    }

    static let sessionLogFull = RawRequest(
        top: [("v", "1"), ("op", #""session.log""#)],
        data: [("id", #""3F2B8C1E-0000-4000-8000-000000000001""#), ("userId", #""henning""#), ("activity", #""mindfulness""#),
               ("start", #""2026-11-23T10:15:00+01:00""#), ("end", #""2026-11-23T10:35:00.250+01:00""#), ("source", #""watch""#)])
    static let sessionLogMinimal = RawRequest(
        top: [("op", #""session.log""#), ("v", "1")],
        data: [("userId", #""u1""#), ("activity", #""workout""#), ("start", #""2026-11-23T17:00:00Z""#), ("end", #""2026-11-24T17:00:00Z""#)])
    static let noAlcLogFull = RawRequest(
        top: [("v", "1"), ("op", #""noalc.log""#)],
        data: [("id", #""7c9e6679-7425-40de-944b-e07fc1f90ae7""#), ("userId", #""henning""#), ("day", #""2026-11-23""#),
               ("level", #""wild""#), ("source", #""notifier""#)])
    static let noAlcLogMinimal = RawRequest(
        top: [("v", "1"), ("op", #""noalc.log""#)],
        data: [("userId", #""A-z_9""#), ("day", #""2024-02-29""#), ("level", #""steady""#)])
    static let bases = [sessionLogFull, sessionLogMinimal, noAlcLogFull, noAlcLogMinimal]

    /// Values of every JSON type, edge-case numbers and strings, and valid values of the other fields.
    static let valuePool: [String] = [
        "null", "true", "false", "0", "-0", "1", "-1", "2", "1.5", "-1.5", "1.0", "1e0", "1e400", "-1e400", "1e-400",
        "99999999999999999999", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        #""""#, #""x""#, #""1""#, #""henning""#, #""u10""#, #""hen.ning""#, #""hen ning""#, #""j\u00fcrgen""#,
        "\"" + String(repeating: "x", count: 64) + "\"", "\"" + String(repeating: "x", count: 65) + "\"",
        "\"" + String(repeating: "s", count: 201) + "\"",
        #""mindfulness""#, #""workout""#, #""noalc""#, #""Workout""#, #""steady""#, #""easy""#, #""wild""#,
        #""2026-11-23""#, #""2026-02-29""#, #""2024-02-29""#, #""2026-13-01""#, #""0000-01-01""#, #""9999-12-31""#,
        #""2026-11-23T17:00:00Z""#, #""2026-11-23T17:00:00""#, #""2026-11-23t17:00:00.123456789z""#,
        #""2026-11-24T17:00:00.001+01:00""#, #""2026-11-23T24:00:00Z""#, #""1969-12-31T23:59:59.999Z""#,
        #""0001-01-01T00:00:00Z""#, #""9999-12-31T23:59:59Z""#, #""9999-12-31T23:59:59-23:59""#, #""0001-01-01T00:00:00+23:59""#,
        #""3f2b8c1e-0000-4000-8000-000000000001""#, #""not-a-uuid""#, #""session.log""#, #""noalc.log""#,
        #""\ud800""#, #""\udc00x""#, #""\ud83d\ude00""#, #""a\u0000b""#, #""\n\t\\\"""#,
        "[]", "{}", "[1,2]", #"{"a":1}"#, "[[[]]]", #"{"userId":"henning"}"#, #"["mindfulness"]"#,
    ]

    mutating func mutateValues(_ random: inout SplitMix64) {
        let touchData = data != nil && random.chance(3, in: 4)
        var fields = touchData ? data! : top
        switch random.below(7) {
        case 0 where !fields.isEmpty:  // drop a key
            fields.remove(at: random.below(fields.count))
        case 1 where !fields.isEmpty, 2 where !fields.isEmpty:  // another value, maybe of another type
            fields[random.below(fields.count)].value = random.pick(Self.valuePool)
        case 3 where fields.count >= 2:  // swap two values
            let a = random.below(fields.count), b = random.below(fields.count)
            let value = fields[a].value
            fields[a].value = fields[b].value
            fields[b].value = value
        case 4 where !fields.isEmpty:  // the same key again, with another value
            fields.insert((fields[random.below(fields.count)].key, random.pick(Self.valuePool)), at: random.below(fields.count + 1))
        case 5 where !fields.isEmpty:  // rename a key (case, typo)
            let index = random.below(fields.count)
            fields[index].key = random.chance(1, in: 2) ? fields[index].key.uppercased() : fields[index].key + "_"
        default:  // an unknown key
            fields.append(("unknown\(random.below(10))", random.pick(Self.valuePool)))
        }
        if touchData { data = fields } else { top = fields }
        if random.chance(1, in: 40) { data = nil }
    }
}

/// Byte-level mutations.
func mutateBytes(_ bytes: inout [UInt8], _ random: inout SplitMix64) {
    let interesting: [UInt8] = Array(#"{}[]":,\ 0-e.tnu"#.utf8) + [0x00, 0x01, 0x0A, 0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xED, 0xF0, 0xFE, 0xFF]
    switch random.below(6) {
    case 0 where !bytes.isEmpty:  // flip one bit
        bytes[random.below(bytes.count)] ^= UInt8(1) << UInt8(random.below(8))
    case 1 where !bytes.isEmpty:  // overwrite one byte
        bytes[random.below(bytes.count)] = random.chance(1, in: 2) ? random.pick(interesting) : UInt8(truncatingIfNeeded: random.next())
    case 2:  // insert bytes
        let count = 1 + random.below(4)
        let insert = (0..<count).map { _ in random.chance(2, in: 3) ? random.pick(interesting) : UInt8(truncatingIfNeeded: random.next()) }
        bytes.insert(contentsOf: insert, at: random.below(bytes.count + 1))
    case 3 where !bytes.isEmpty:  // delete a range
        let start = random.below(bytes.count)
        bytes.removeSubrange(start..<min(bytes.count, start + 1 + random.below(8)))
    case 4 where !bytes.isEmpty:  // duplicate a range
        let start = random.below(bytes.count)
        let range = start..<min(bytes.count, start + 1 + random.below(16))
        bytes.insert(contentsOf: Array(bytes[range]), at: random.below(bytes.count + 1))
    default:  // truncate
        if !bytes.isEmpty { bytes.removeLast(1 + random.below(min(bytes.count, 12))) }
    }
}

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
