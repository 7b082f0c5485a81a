import Foundation
import Testing
@testable import LHTSchema

// PROTOCOL.md: "A missing required field, a wrong type or an out-of-range value is an invalid_argument
// error naming the field as a path from the request's root", plus bad_json / unsupported_version / op.

/// The valid `session.log` data, field by field, in a fixed order; `nil` in an override drops the key.
func sessionLogData(_ overrides: [String: String?] = [:]) -> String {
    let base: [(String, String)] = [
        ("id", #""3f2b8c1e-0000-4000-8000-000000000001""#),
        ("userId", #""henning""#),
        ("activity", #""workout""#),
        ("start", #""2026-11-23T17:00:00+01:00""#),
        ("end", #""2026-11-23T18:00:00+01:00""#),
        ("source", #""watch""#),
    ]
    return fields(base, overrides)
}

/// The valid `noalc.log` data.
func noAlcLogData(_ overrides: [String: String?] = [:]) -> String {
    let base: [(String, String)] = [
        ("id", #""7c9e6679-7425-40de-944b-e07fc1f90ae7""#),
        ("userId", #""henning""#),
        ("day", #""2026-11-23""#),
        ("level", #""steady""#),
        ("source", #""cli""#),
    ]
    return fields(base, overrides)
}

private func fields(_ base: [(String, String)], _ overrides: [String: String?]) -> String {
    var parts: [String] = []
    for (key, value) in base {
        if let override = overrides[key] {
            if let override { parts.append("\"\(key)\":\(override)") }
        } else {
            parts.append("\"\(key)\":\(value)")
        }
    }
    for (key, value) in overrides.sorted(by: { $0.key < $1.key }) where !base.contains(where: { $0.0 == key }) {
        if let value { parts.append("\"\(key)\":\(value)") }
    }
    return "{" + parts.joined(separator: ",") + "}"
}

@Suite("invalid_argument names the field")
struct InvalidArgumentTests {
    @Test func theValidBasesAreValid() throws {
        #expect(throws: Never.self) { try pipeline(SessionLogRequest.self, wireRequest("session.log", sessionLogData())).get() }
        #expect(throws: Never.self) { try pipeline(NoAlcLogRequest.self, wireRequest("noalc.log", noAlcLogData())).get() }
    }

    static let sessionLogCases: [(String, [String: String?], String)] = [
        ("missing userId", ["userId": nil], "data.userId"),
        ("null userId", ["userId": "null"], "data.userId"),
        ("number userId", ["userId": "5"], "data.userId"),
        ("userId with a dot", ["userId": #""hen.ning""#], "data.userId"),
        ("userId with a space", ["userId": #""hen ning""#], "data.userId"),
        ("userId with an umlaut", ["userId": #""j\u00fcrgen""#], "data.userId"),
        ("empty userId", ["userId": #""""#], "data.userId"),
        ("65-character userId", ["userId": "\"" + String(repeating: "a", count: 65) + "\""], "data.userId"),
        ("missing activity", ["activity": nil], "data.activity"),
        ("noalc activity", ["activity": #""noalc""#], "data.activity"),
        ("unknown activity", ["activity": #""running""#], "data.activity"),
        ("activity in upper case", ["activity": #""Workout""#], "data.activity"),
        ("number start", ["start": "5"], "data.start"),
        ("object start", ["start": "{}"], "data.start"),
        ("null start", ["start": "null"], "data.start"),
        ("missing start", ["start": nil], "data.start"),
        ("start without offset", ["start": #""2026-11-23T17:00:00""#], "data.start"),
        ("start at 24:00", ["start": #""2026-11-23T24:00:00Z""#], "data.start"),
        ("start with junk", ["start": #""2026-11-23T17:00:00Zjunk""#], "data.start"),
        ("start as a day", ["start": #""2026-11-23""#], "data.start"),
        ("bad end", ["end": #""yesterday""#], "data.end"),
        ("missing end", ["end": nil], "data.end"),
        ("end before start", ["end": #""2026-11-23T16:59:59.999+01:00""#], "data.end"),
        ("end a day before start", ["end": #""2026-11-22T18:00:00+01:00""#], "data.end"),
        ("longer than 24 h", ["end": #""2026-11-24T17:00:00.001+01:00""#], "data.end"),
        ("25 h", ["end": #""2026-11-24T17:00:00Z""#], "data.end"),
        ("id not a UUID", ["id": #""not-a-uuid""#], "data.id"),
        ("id empty", ["id": #""""#], "data.id"),
        ("id a number", ["id": "42"], "data.id"),
        ("id an occurrence identity", ["id": #""3f2b8c1e-0000-4000-8000-000000000001@2026-11-23T17:00:00Z""#], "data.id"),
        ("source a number", ["source": "5"], "data.source"),
        ("source an array", ["source": #"["watch"]"#], "data.source"),
    ]

    @Test(arguments: sessionLogCases)
    func sessionLog(name: String, overrides: [String: String?], field: String) {
        expectInvalid(SessionLogRequest.self, wireRequest("session.log", sessionLogData(overrides)), field: field)
    }

    static let noAlcLogCases: [(String, [String: String?], String)] = [
        ("missing userId", ["userId": nil], "data.userId"),
        ("bad level", ["level": #""drunk""#], "data.level"),
        ("level as drinks", ["level": "4"], "data.level"),
        ("level in upper case", ["level": #""Steady""#], "data.level"),
        ("missing level", ["level": nil], "data.level"),
        ("null level", ["level": "null"], "data.level"),
        ("bad day", ["day": #""2026-02-29""#], "data.day"),
        ("day month 13", ["day": #""2026-13-01""#], "data.day"),
        ("day not padded", ["day": #""2026-1-01""#], "data.day"),
        ("day as an instant", ["day": #""2026-11-23T00:00:00Z""#], "data.day"),
        ("day as a number", ["day": "20261123"], "data.day"),
        ("missing day", ["day": nil], "data.day"),
        ("id not a UUID", ["id": #""entry-1""#], "data.id"),
        ("id a boolean", ["id": "true"], "data.id"),
    ]

    @Test(arguments: noAlcLogCases)
    func noAlcLog(name: String, overrides: [String: String?], field: String) {
        expectInvalid(NoAlcLogRequest.self, wireRequest("noalc.log", noAlcLogData(overrides)), field: field)
    }

    @Test func missingDataNamesTheFirstRequiredField() {
        expectInvalid(SessionLogRequest.self, frame(#"{"v":1,"op":"session.log"}"#), field: "data.userId")
        expectInvalid(SessionLogRequest.self, frame(#"{"v":1,"op":"session.log","data":null}"#), field: "data.userId")
        expectInvalid(SessionLogRequest.self, wireRequest("session.log", "{}"), field: "data.userId")
        expectInvalid(NoAlcLogRequest.self, frame(#"{"op":"noalc.log","v":1}"#), field: "data.userId")
        expectInvalid(DailySummaryRequest.self, frame(#"{"v":1,"op":"daily.summary"}"#), field: "data.userId")
    }

    /// `data` that is not an object is named as `data` itself: the path from the root to the bad value.
    @Test(arguments: ["[]", "5", #""text""#, "true", #"[{"userId":"henning"}]"#])
    func dataThatIsNotAnObject(data: String) {
        expectInvalid(SessionLogRequest.self, wireRequest("session.log", data), field: "data")
    }

    static let eventsSinceCases: [(String, String)] = [
        (#"{"limit":0}"#, "data.limit"),
        (#"{"limit":1001}"#, "data.limit"),
        (#"{"limit":-1}"#, "data.limit"),
        (#"{"limit":"5"}"#, "data.limit"),
        (#"{"limit":1.5}"#, "data.limit"),
        (#"{"limit":null,"after":-1}"#, "data.after"),
        (#"{"after":-1}"#, "data.after"),
        (#"{"after":-1,"limit":10}"#, "data.after"),
        (#"{"after":"0"}"#, "data.after"),
        (#"{"after":99999999999999999999}"#, "data.after"),
        (#"{"after":0,"limit":100000}"#, "data.limit"),
    ]

    @Test(arguments: eventsSinceCases)
    func eventsSince(data: String, field: String) {
        expectInvalid(EventsSinceRequest.self, wireRequest("events.since", data), field: field)
    }

    /// A number beyond any double may be refused as bad_json (RFC 8259 lets a reader limit the range),
    /// or named as the field; it must not be an invalid_argument without a usable field.
    @Test func numberBeyondDoubleRange() {
        switch pipeline(EventsSinceRequest.self, wireRequest("events.since", #"{"after":1e400}"#)) {
        case .success(let value): Issue.record("accepted after = \(value.after)")
        case .failure(let error):
            #expect(error.code == .badJSON || (error.code == .invalidArgument && error.field == "data.after"), "\(error)")
        }
    }

    @Test func dailySummaryAcceptsExactly366Days() throws {
        let range = #"{"userId":"u1","from":"2026-01-01","until":"2027-01-01","timeZone":"Europe/Berlin"}"#
        let request = try pipeline(DailySummaryRequest.self, wireRequest("daily.summary", range)).get()
        #expect(request.until.days(since: request.from) + 1 == 366)
        let oneDay = #"{"userId":"u1","from":"2026-01-01","until":"2026-01-01","timeZone":"UTC"}"#
        #expect(throws: Never.self) { try pipeline(DailySummaryRequest.self, wireRequest("daily.summary", oneDay)).get() }
    }

    static let dailySummaryCases: [(String, String)] = [
        (#"{"userId":"u1","from":"2026-01-01","until":"2027-01-02","timeZone":"Europe/Berlin"}"#, "data.until"),
        (#"{"userId":"u1","from":"2024-01-01","until":"2025-01-01","timeZone":"Europe/Berlin"}"#, "data.until"),
        (#"{"userId":"u1","from":"2000-01-01","until":"2026-01-01","timeZone":"Europe/Berlin"}"#, "data.until"),
        (#"{"userId":"u1","from":"2024-01-01","until":"2024-12-31","timeZone":"CET+1"}"#, "data.timeZone"),
        (#"{"userId":"u1","from":"2026-01-01","until":"2026-12-31","timeZone":"Mars/Olympus"}"#, "data.timeZone"),
        (#"{"userId":"u1","from":"2026-01-01","until":"2026-12-31","timeZone":""}"#, "data.timeZone"),
        (#"{"userId":"u1","from":"2026-01-01","until":"2026-12-31","timeZone":60}"#, "data.timeZone"),
        (#"{"userId":"u1","from":"2026-01-01","until":"2026-12-31"}"#, "data.timeZone"),
        (#"{"userId":"u1","from":"2026-01-02","until":"2026-01-01","timeZone":"UTC"}"#, "data.until"),
        (#"{"userId":"u1","from":"2026-1-1","until":"2026-01-01","timeZone":"UTC"}"#, "data.from"),
        (#"{"userId":"u1","from":"2026-01-01","until":"2026-02-30","timeZone":"UTC"}"#, "data.until"),
        (#"{"userId":"u1","from":"2026-01-01","timeZone":"UTC"}"#, "data.until"),
        (#"{"userId":"u.1","from":"2026-01-01","until":"2026-01-01","timeZone":"UTC"}"#, "data.userId"),
    ]

    @Test(arguments: dailySummaryCases)
    func dailySummary(data: String, field: String) {
        expectInvalid(DailySummaryRequest.self, wireRequest("daily.summary", data), field: field)
    }

    @Test func listRanges() {
        expectInvalid(SessionListRequest.self, wireRequest("session.list", #"{"userId":"u1","from":"2026-11-23T00:00:00Z","until":"2026-11-22T23:59:59Z"}"#), field: "data.until")
        expectInvalid(SessionListRequest.self, wireRequest("session.list", #"{"userId":"u1","from":"2026-11-23","until":"2026-11-24T00:00:00Z"}"#), field: "data.from")
        expectInvalid(SessionListRequest.self, wireRequest("session.list", #"{"userId":"u1","from":"2026-11-23T00:00:00Z","until":"2026-11-24T00:00:00Z","activity":"running"}"#), field: "data.activity")
        expectInvalid(DayRangeRequest.self, wireRequest("noalc.list", #"{"userId":"u1","from":"2026-11-23","until":"2026-11-22"}"#), field: "data.until")
        expectInvalid(DayRangeRequest.self, wireRequest("noalc.list", #"{"userId":"u1","from":"2026-11-23"}"#), field: "data.until")
    }

    /// The path format of PROTOCOL.md (`data.weekdays[2]`), for any payload a service decodes.
    @Test func pathsIndexArraysAndNestObjects() throws {
        struct Payload: Decodable { let weekdays: [Weekday]; let window: Window? }
        struct Window: Decodable { let from: LocalTime }
        func field(_ data: String) -> String? {
            switch pipeline(Payload.self, wireRequest("reminder.put", data)) {
            case .success: nil
            case .failure(let error): error.field
            }
        }
        #expect(field(#"{"weekdays":["mon","tue","xyz"]}"#) == "data.weekdays[2]")
        #expect(field(#"{"weekdays":["mon",5]}"#) == "data.weekdays[1]")
        #expect(field(#"{"weekdays":[null]}"#) == "data.weekdays[0]")
        #expect(field(#"{"weekdays":"mon"}"#) == "data.weekdays")
        #expect(field(#"{"weekdays":[],"window":{"from":"25:00"}}"#) == "data.window.from")
        #expect(field(#"{"weekdays":[],"window":{}}"#) == "data.window.from")
        #expect(field(#"{"weekdays":[],"window":{"from":"08:00"}}"#) == nil)
    }

    /// A dictionary key that happens to be a number is still a key: `data.counts.5`, not an index `[5]`.
    @Test func numericDictionaryKeysAreKeysNotIndexes() {
        struct Payload: Decodable { let counts: [String: Int] }
        switch pipeline(Payload.self, wireRequest("x", #"{"counts":{"5":"five"}}"#)) {
        case .success: Issue.record("accepted")
        case .failure(let error): #expect(error.field == "data.counts.5")
        }
    }

    @Test func errorsThatAreNotDecodingErrorsNameThePrefix() {
        struct Other: Error {}
        let error = WireError(decoding: Other(), under: "data")
        #expect(error.code == .invalidArgument)
        #expect(error.field == "data")
        #expect(WireError.invalid("data.start", "bad").message == "data.start: bad")
    }
}
