import Foundation
import Testing
import TestSupport
@testable import LHTSchema

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
