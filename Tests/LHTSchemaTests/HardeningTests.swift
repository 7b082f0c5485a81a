import Foundation
import Testing
@testable import LHTSchema

// The red-team findings on the schema: U+0000 in any string field, time zones that are not exactly
// an IANA name, NoAlc days far from now, and the user's zone for streak.get's today.

/// One op's request type, decoded from a frame as a service decodes it.
private struct RequestDecoder: Sendable {
    let op: String
    let decode: @Sendable (Data) -> WireError?

    init<Request, Reply>(_ op: Op<Request, Reply>) {
        self.op = op.name
        decode = { frame in pipeline(Request.self, frame).failure }
    }
}

/// Every op with valid data; each string value (and array element) is a field the NUL test injects into.
private let validRequests: [(RequestDecoder, [(String, String)])] = [
    (RequestDecoder(Ops.sessionLog), [("id", #""3f2b8c1e-0000-4000-8000-000000000001""#), ("userId", #""henning""#), ("activity", #""workout""#),
                               ("start", #""2026-11-23T17:00:00+01:00""#), ("end", #""2026-11-23T18:00:00+01:00""#), ("source", #""watch""#)]),
    (RequestDecoder(Ops.noalcLog), [("id", #""3f2b8c1e-0000-4000-8000-000000000001""#), ("userId", #""henning""#), ("day", #""2026-11-23""#),
                             ("level", #""steady""#), ("source", #""cli""#)]),
    (RequestDecoder(Ops.sessionList), [("userId", #""henning""#), ("from", #""2026-11-01T00:00:00Z""#), ("until", #""2026-12-01T00:00:00Z""#),
                                ("activity", #""workout""#)]),
    (RequestDecoder(Ops.noalcList), [("userId", #""henning""#), ("from", #""2026-11-01""#), ("until", #""2026-11-30""#)]),
    (RequestDecoder(Ops.dailySummary), [("userId", #""henning""#), ("from", #""2026-11-01""#), ("until", #""2026-11-30""#),
                                 ("timeZone", #""Europe/Berlin""#)]),
    (RequestDecoder(Ops.userPut), [("userId", #""henning""#), ("timeZone", #""Europe/Berlin""#), ("locale", #""de""#)]),
    (RequestDecoder(Ops.userGet), [("userId", #""henning""#)]),
    (RequestDecoder(Ops.reminderPut), [("id", #""3f2b8c1e-0000-4000-8000-000000000001""#), ("userId", #""henning""#), ("activity", #""noalc""#),
                                ("time", #""09:00""#), ("weekdays", #"["mon"]"#), ("title", #""Check-in""#), ("body", #""How was it?""#)]),
    (RequestDecoder(Ops.reminderGet), [("id", #""3f2b8c1e-0000-4000-8000-000000000001""#)]),
    (RequestDecoder(Ops.reminderList), [("userId", #""henning""#)]),
    (RequestDecoder(Ops.reminderDelete), [("id", #""3f2b8c1e-0000-4000-8000-000000000001""#)]),
    (RequestDecoder(Ops.reminderUpcoming), [("userId", #""henning""#)]),
    (RequestDecoder(Ops.reminderRestore), [("reminderId", #""3f2b8c1e-0000-4000-8000-000000000001""#), ("at", #""2026-11-23T18:00:00Z""#)]),
    (RequestDecoder(Ops.reminderTest), [("reminderId", #""3f2b8c1e-0000-4000-8000-000000000001""#)]),
    (RequestDecoder(Ops.clockSet), [("now", #""2026-11-23T18:00:00Z""#)]),
    (RequestDecoder(Ops.notificationList), [("userId", #""henning""#)]),
    (RequestDecoder(Ops.notificationAction), [("notificationId", #""3f2b8c1e-0000-4000-8000-000000000001@2026-11-23T08:00:00Z""#),
                                       ("actionId", #""noalc.steady""#)]),
    (RequestDecoder(Ops.streakGet), [("userId", #""henning""#), ("asOf", #""2026-11-23""#), ("timeZone", #""Europe/Berlin""#)]),
    (RequestDecoder(Ops.calendarGet), [("userId", #""henning""#), ("month", #""2026-11""#)]),
]

private func data(_ fields: [(String, String)]) -> String {
    "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
}

/// `value` (a JSON string, or an array of one) with U+0000 put `where`: before its last character or at its end.
private func withNUL(_ value: String, atEnd: Bool) -> (json: String, pathSuffix: String) {
    let isArray = value.hasPrefix("[")
    let closing = isArray ? 2 : 1  // `"` or `"]`
    let cut = value.index(value.endIndex, offsetBy: -(closing + (atEnd ? 0 : 1)))
    return (value[..<cut] + #"\u0000"# + value[cut...], isArray ? "[0]" : "")
}

@Suite("Hardening: U+0000, zones, NoAlc days, streak.get's zone")
struct HardeningTests {
    @Test("every request's valid example is accepted")
    func examplesAreValid() {
        for (decoder, fields) in validRequests {
            let error = decoder.decode(wireRequest(decoder.op, data(fields)))
            #expect(error == nil, "\(decoder.op): \(String(describing: error))")
        }
        // Every op with a string field is in the table (health, events.since, clock.get/advance have none).
        let covered = Set(validRequests.map(\.0.op))
        #expect(Set(Ops.all.map(\.name)).subtracting(covered) == ["health", "events.since", "clock.get", "clock.advance"])
    }

    @Test("U+0000 in any string field of any request is invalid_argument naming that field")
    func nulIsRefusedEverywhere() {
        _ = ZoneID("Europe/Berlin")  // Foundation's zone cache is what let "Europe/Berlin\0x" through
        for (decoder, fields) in validRequests {
            for (index, (key, value)) in fields.enumerated() {
                for atEnd in [false, true] {
                    var damaged = fields
                    let (json, suffix) = withNUL(value, atEnd: atEnd)
                    damaged[index] = (key, json)
                    let frame = wireRequest(decoder.op, data(damaged))
                    let error = decoder.decode(frame)
                    #expect(error?.code == .invalidArgument && error?.field == "data.\(key)\(suffix)",
                            "\(decoder.op) \(key): \(String(describing: error)) for \(printable(frame))")
                }
            }
        }
        expectHeadError(frame(#"{"v":1,"op":"health\u0000"}"#), .invalidArgument, field: "op")
    }

    @Test("everything but U+0000 is kept exactly through decoding and the wire encoder")
    func otherCharactersRoundTrip() throws {
        let texts = ["🧘‍♀️ Yoga", "e\u{301} vs é", "line\u{2028}separator\u{2029}", "tab\there", "\u{1}\u{1F}\u{7F}", "\"\\/", "ﷺ𝄞"]
        for text in texts {
            let json = String(decoding: try WireJSON.encode(text), as: UTF8.self)
            let request = try #require(try pipeline(ReminderPutRequest.self, wireRequest(
                "reminder.put", #"{"userId":"henning","activity":"workout","title":\#(json),"body":\#(json)}"#)).get())
            #expect(Array(request.title!.utf8) == Array(text.utf8))
            let session = try pipeline(SessionLogRequest.self, wireRequest("session.log", sessionLogData(["source": json]))).get()
            let again = try JSONDecoder().decode(SessionLogRequest.self, from: WireJSON.encode(session))
            #expect(Array(again.source!.utf8) == Array(text.utf8))
        }
    }

    @Test("a zone is exactly an IANA name", arguments: [
        "Europe/Berlin\u{0}x", "Europe/Berlin\u{0}", "Europe/Berlin ", " Europe/Berlin", "Europe/Berlin\n", "europe/berlin",
        "GMT+1", "+01:00", "Europe/../Europe/Berlin", "Europe/Berlin/", "",
    ])
    func zonesAreExact(text: String) {
        _ = ZoneID("Europe/Berlin")
        #expect(ZoneID(text) == nil)
        let json = String(decoding: try! WireJSON.encode(text), as: UTF8.self)
        expectInvalid(UserPutRequest.self, wireRequest("user.put", #"{"userId":"henning","timeZone":\#(json),"locale":"en"}"#),
                      field: "data.timeZone")
    }

    @Test("real IANA names are still zones", arguments: [
        "Europe/Berlin", "UTC", "Etc/UTC", "Asia/Kolkata", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince",
        "Pacific/Kiritimati",
    ])
    func realZones(text: String) {
        #expect(ZoneID(text)?.identifier == text)
    }

    @Test("NoAlc days: from 2000-01-01 (decoding) through tomorrow in UTC (checkDay with a given today)")
    func noAlcDayRange() throws {
        for day in ["0001-01-01", "1999-12-31", "1970-01-01"] {
            expectInvalid(NoAlcLogRequest.self, wireRequest("noalc.log", noAlcLogData(["day": "\"\(day)\""])), field: "data.day")
        }
        let today = try #require(LocalDay("2026-11-23"))
        func check(_ text: String) -> WireError? {
            let request = NoAlcLogRequest(userId: UserID("henning")!, day: LocalDay(text)!, level: .steady)
            do { try request.checkDay(today: today); return nil } catch { return error }
        }
        for ok in ["2000-01-01", "2026-11-22", "2026-11-23", "2026-11-24"] { #expect(check(ok) == nil, "\(ok)") }
        for bad in ["2026-11-25", "9999-12-31", "1999-12-31"] {
            #expect(check(bad)?.code == .invalidArgument && check(bad)?.field == "data.day", "\(bad)")
        }
    }

    @Test("streak.get: timeZone sets today when asOf is absent; asOf wins; the service's zone is the default")
    func streakGetZone() throws {
        // 2026-11-23T23:30Z is already the 24th in Berlin and still the 23rd in New York.
        let now = try #require(Instant(rfc3339: "2026-11-23T23:30:00Z"))
        let berlin = try #require(ZoneID("Europe/Berlin")), newYork = try #require(ZoneID("America/New_York"))
        let withZone = try pipeline(StreakGetRequest.self, wireRequest("streak.get", #"{"userId":"henning","timeZone":"Europe/Berlin"}"#)).get()
        #expect(withZone.timeZone == berlin)
        #expect(withZone.day(now: now, serviceZone: newYork) == LocalDay("2026-11-24"))
        let without = try pipeline(StreakGetRequest.self, wireRequest("streak.get", #"{"userId":"henning"}"#)).get()
        #expect(without.timeZone == nil)
        #expect(without.day(now: now, serviceZone: newYork) == LocalDay("2026-11-23"))
        let asOf = StreakGetRequest(userId: UserID("henning")!, asOf: LocalDay("2020-01-01"), timeZone: berlin)
        #expect(asOf.day(now: now, serviceZone: newYork) == LocalDay("2020-01-01"))
        expectInvalid(StreakGetRequest.self, wireRequest("streak.get", #"{"userId":"henning","timeZone":"Mars/Olympus"}"#), field: "data.timeZone")
    }
}
