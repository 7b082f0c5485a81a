import Foundation
import Testing
@testable import LHTSchema

// Every JSON shape of PROTOCOL.md that has a type in LHTSchema today: decode the PROTOCOL-style JSON,
// encode with `WireJSON.encode`, decode again, and compare.

enum Examples {
    static let sessionID = "3F2B8C1E-0000-4000-8000-00000000000A"
    static let sessionIDLower = "3f2b8c1e-0000-4000-8000-00000000000a"
    static let entryID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    static let eventID = "0B5E2A4C-1111-4222-8333-444455556666"

    static let sessionLogData = """
        {"id":"\(sessionID)","userId":"henning","activity":"mindfulness",
         "start":"2026-11-23T10:15:00+01:00","end":"2026-11-23T10:35:00.500+01:00","source":"watch"}
        """
    static let sessionLogRequest = #"{"v":1, "op":"session.log", "data":"# + sessionLogData + "}"
    static let noAlcLogData = #"{"userId":"henning","day":"2026-11-23","level":"easy","source":"cli"}"#
    static let noAlcLogRequest = #"{"v":1,"op":"noalc.log","data":"# + noAlcLogData + "}"

    static let storedSession = """
        {"id":"\(sessionID)","userId":"henning","activity":"workout","start":"2026-11-23T17:00:00+01:00",
         "end":"2026-11-23T18:00:00+01:00","source":"watch","loggedAt":"2026-11-23T17:00:01.250Z"}
        """
    static let storedNoAlcEntry = """
        {"id":"\(entryID)","userId":"henning","day":"2026-11-22","level":"wild","drinks":6,"source":null,
         "loggedAt":"2026-11-23T08:00:00Z"}
        """
    static let sessionLoggedEnvelope = """
        {"v":1, "type":"session.logged", "seq":42, "id":"\(eventID)", "time":"2026-11-23T17:00:01.250Z",
         "source":"session-logger", "topic":"session.logged.henning.workout", "data":\(storedSession)}
        """
    static let reminderDueEnvelope = """
        {"v":1,"type":"reminder.due","seq":7,"id":"\(eventID.lowercased())","time":"2026-11-23T18:00:00+01:00",
         "source":"reminder-planner","topic":"reminder.due.henning.workout",
         "data":{"reminderId":"\(entryID)","userId":"henning","activity":"workout","at":"2026-11-23T17:00:00Z",
                 "localTime":"18:00","day":"2026-11-23","weekday":"mon","windowStart":"2026-11-23T05:00:00Z",
                 "status":"fired","timeZone":"Europe/Berlin","locale":"de","title":null,"body":null,
                 "late":false,"test":false,"nested":[1,2.5,-3,true,{"a":[]}]}}
        """
}

@Suite("PROTOCOL.md shapes round-trip")
struct ProtocolRoundTripTests {
    @Test func errorCodesAreTheProtocolTable() {
        #expect(ErrorCode.allCases.map(\.rawValue) == [
            "bad_json", "unsupported_version", "unknown_op", "invalid_argument", "not_found", "conflict",
            "unauthorized", "unavailable", "internal",
        ])
        #expect(wireVersion == 1)
    }

    @Test func sessionLogRequestEnvelope() throws {
        let bytes = frame(Examples.sessionLogRequest)
        let head = try RequestHead(frame: bytes)
        #expect(head.op == "session.log")
        #expect(head.hasData)
        let request = try decodeRequestData(SessionLogRequest.self, from: bytes, head: head)
        #expect(request.id == RecordID(Examples.sessionIDLower))
        #expect(request.userId == UserID("henning"))
        #expect(request.activity == .mindfulness)
        #expect(request.start == Instant(rfc3339: "2026-11-23T09:15:00Z"))
        #expect(request.end.description == "2026-11-23T09:35:00.500Z")
        #expect(request.source == "watch")

        // Re-sent as a client would send it, through the same pipeline.
        let resent = try WireJSON.encode(RequestFrame(op: "session.log", data: request))
        let wire = String(decoding: resent, as: UTF8.self)
        #expect(try jsonObject(wire) == jsonObject(#"{"data":{"activity":"mindfulness","end":"2026-11-23T09:35:00.500Z","id":"\#(Examples.sessionIDLower)","source":"watch","start":"2026-11-23T09:15:00Z","userId":"henning"},"op":"session.log","v":1}"#))
        #expect(try pipeline(SessionLogRequest.self, resent).get() == request)

        // The data object alone round-trips too.
        try expectEqualRoundTrip(SessionLogRequest.self, Examples.sessionLogData)
    }

    @Test func sessionLogWithoutOptionalFields() throws {
        let data = #"{"userId":"u1","activity":"workout","start":"2026-11-23T17:00:00Z","end":"2026-11-24T17:00:00Z"}"#
        let request = try pipeline(SessionLogRequest.self, wireRequest("session.log", data)).get()
        #expect(request.id == nil)
        #expect(request.source == nil)
        #expect(request.end.milliseconds(since: request.start) == 24 * 3600 * 1000)  // exactly 24 h is allowed
        let (_, wire) = try expectEqualRoundTrip(SessionLogRequest.self, data)
        #expect(!wire.contains("\"id\"") && !wire.contains("\"source\""))
        // end == start is allowed.
        let zero = #"{"userId":"u1","activity":"mindfulness","start":"2026-11-23T17:00:00Z","end":"2026-11-23T18:00:00+01:00"}"#
        #expect(throws: Never.self) { try pipeline(SessionLogRequest.self, wireRequest("session.log", zero)).get() }
    }

    @Test func unknownFieldsAreIgnored() throws {
        let bytes = frame("""
            {"v":1,"op":"session.log","extra":{"x":[1,{"y":null}]},"data":{"userId":"henning","activity":"workout",
             "start":"2026-11-23T17:00:00Z","end":"2026-11-23T18:00:00Z","unknown":"ignored","more":[true,false]}}
            """)
        #expect(try pipeline(SessionLogRequest.self, bytes).get().userId == UserID("henning"))
    }

    @Test func noAlcLogRequestEnvelope() throws {
        let request = try pipeline(NoAlcLogRequest.self, frame(Examples.noAlcLogRequest)).get()
        #expect(request == NoAlcLogRequest(userId: UserID("henning")!, day: LocalDay("2026-11-23")!, level: .easy, source: "cli"))
        let resent = try WireJSON.encode(RequestFrame(op: "noalc.log", data: request))
        #expect(try pipeline(NoAlcLogRequest.self, resent).get() == request)
        let (_, wire) = try expectEqualRoundTrip(NoAlcLogRequest.self, Examples.noAlcLogData)
        #expect(try jsonObject(wire) == jsonObject(#"{"day":"2026-11-23","level":"easy","source":"cli","userId":"henning"}"#))
        for level in NoAlcLevel.allCases {
            let data = #"{"id":"\#(Examples.entryID.uppercased())","userId":"u1","day":"2024-02-29","level":"\#(level.rawValue)"}"#
            let (value, wire) = try expectEqualRoundTrip(NoAlcLogRequest.self, data)
            #expect(value.level == level)
            #expect(wire.contains(Examples.entryID))
        }
    }

    @Test func noAlcLevelsAndDrinks() {
        #expect(NoAlcLevel.allCases.map(\.rawValue) == ["steady", "easy", "wild"])
        #expect(NoAlcLevel.allCases.map(\.drinks) == [0, 4, 6])
        #expect(Activity.allCases.map(\.rawValue) == ["mindfulness", "workout", "noalc"])
        #expect(Activity.allCases.filter(\.isSession) == [.mindfulness, .workout])
    }

    @Test func healthHasNoData() throws {
        let bytes = frame(#"{"v":1,"op":"health"}"#)
        let head = try RequestHead(frame: bytes)
        #expect(head.op == "health")
        #expect(!head.hasData)
        #expect(try decodeRequestData(NoFields.self, from: bytes, head: head) == NoFields())
        #expect(try RequestHead(frame: frame(#"{"v":1,"op":"health","data":null}"#)).hasData == false)
        #expect(try RequestHead(frame: frame(#"{"v":1,"op":"health","data":{}}"#)).hasData == true)
        #expect(try pipeline(NoFields.self, frame(#"{"v":1,"op":"clock.get","data":{}}"#)).get() == NoFields())
    }

    @Test func storedSessionAndNoAlcEntry() throws {
        let (session, sessionWire) = try expectEqualRoundTrip(StoredSession.self, Examples.storedSession)
        #expect(session.id.description == Examples.sessionIDLower)
        #expect(try jsonObject(sessionWire) == jsonObject(#"{"activity":"workout","end":"2026-11-23T17:00:00Z","id":"\#(Examples.sessionIDLower)","loggedAt":"2026-11-23T17:00:01.250Z","source":"watch","start":"2026-11-23T16:00:00Z","userId":"henning"}"#))

        // An absent source is emitted as null: the stored record always has every field.
        let noSource = StoredSession(id: session.id, userId: session.userId, activity: .mindfulness, start: session.start,
                                     end: session.end, source: nil, loggedAt: session.loggedAt)
        let noSourceWire = try jsonObject(String(decoding: try WireJSON.encode(noSource), as: UTF8.self))
        #expect(noSourceWire["source"] == .null)
        #expect(try JSONDecoder().decode(StoredSession.self, from: try WireJSON.encode(noSource)) == noSource)

        let (entry, entryWire) = try expectEqualRoundTrip(StoredNoAlcEntry.self, Examples.storedNoAlcEntry)
        #expect(entry.drinks == 6)
        #expect(entry.source == nil)
        #expect(try jsonObject(entryWire) == jsonObject(#"{"day":"2026-11-22","drinks":6,"id":"\#(Examples.entryID)","level":"wild","loggedAt":"2026-11-23T08:00:00Z","source":null,"userId":"henning"}"#))
        let made = StoredNoAlcEntry(id: entry.id, userId: entry.userId, day: entry.day, level: .easy, source: "notifier", loggedAt: entry.loggedAt)
        #expect(made.drinks == 4)
    }

    @Test func logReceiptAndReplyFrames() throws {
        let receiptJSON = #"{"id":"\#(Examples.sessionID)","seq":42,"duplicate":true}"#
        let (receipt, wire) = try expectEqualRoundTrip(LogReceipt.self, receiptJSON)
        #expect(try jsonObject(wire) == jsonObject(#"{"duplicate":true,"id":"\#(Examples.sessionIDLower)","seq":42}"#))

        // Success: {"v":1,"ok":true,"data":{...}}
        let success = try Reply.success(receipt)
        #expect(String(decoding: success, as: UTF8.self) == #"{"v":1,"ok":true,"data":"# + wire + "}")
        let decodedSuccess = try JSONDecoder().decode(ReplyFrame<LogReceipt>.self, from: success)
        #expect(decodedSuccess.v == 1)
        #expect(decodedSuccess.ok)
        #expect(decodedSuccess.data == receipt)
        #expect(decodedSuccess.error == nil)
        #expect(Reply.success(rawData: frame(wire)) == success)

        // Failure: {"v":1,"ok":false,"error":{"code":..., "message":..., "field":...}}
        let error = WireError.invalid("data.start", "expected an RFC 3339 instant")
        let failure = Reply.failure(error)
        let failureObject = try jsonObject(String(decoding: failure, as: UTF8.self))
        #expect(failureObject["v"] == .number(1))
        #expect(failureObject["ok"] == .bool(false))
        #expect(failureObject["error"]?["code"] == .string("invalid_argument"))
        #expect(failureObject["error"]?["field"] == .string("data.start"))
        #expect(failureObject["data"] == nil)
        let decodedFailure = try JSONDecoder().decode(ReplyFrame<LogReceipt>.self, from: failure)
        #expect(decodedFailure.v == 1)
        #expect(!decodedFailure.ok)
        #expect(decodedFailure.data == nil)
        #expect(decodedFailure.error == error)

        // Every code, with and without a field, as PROTOCOL.md writes it.
        for code in ErrorCode.allCases {
            for field in [nil, "data.weekdays[2]"] as [String?] {
                let sent = WireError(code, "a human sentence", field: field)
                let read = try JSONDecoder().decode(ReplyFrame<NoFields>.self, from: Reply.failure(sent))
                #expect(read.error == sent)
            }
        }
        let handWritten = #"{"v":1, "ok":false, "error":{"code":"not_found", "message":"no such reminder"}}"#
        let read = try JSONDecoder().decode(ReplyFrame<NoFields>.self, from: frame(handWritten))
        #expect(read.error == WireError(.notFound, "no such reminder"))
        try expectEqualRoundTrip(WireError.self, #"{"code":"invalid_argument","message":"data.start: bad","field":"data.start"}"#)
    }

    @Test func healthReply() throws {
        let json = #"{"service":"session-logger","version":"0.1.0","uptimeSeconds":12,"lastSeq":42,"counters":{"intakeRejected":3,"rateLimited":0}}"#
        let (health, wire) = try expectStableRoundTrip(HealthReply.self, json)
        #expect(health.service == "session-logger")
        #expect(health.counters == ["intakeRejected": 3, "rateLimited": 0])
        #expect(try jsonObject(wire) == jsonObject(#"{"counters":{"intakeRejected":3,"rateLimited":0},"lastSeq":42,"service":"session-logger","uptimeSeconds":12,"version":"0.1.0","upstreams":[],"lastError":null,"logId":null}"#))
        // Upstreams and the last error, when a service reports them.
        let following = #"{"service":"notifier","version":"1.0.0","uptimeSeconds":1,"lastSeq":2,"counters":{},"upstreams":[{"name":"reminder-planner","appliedSeq":5,"upstreamSeq":8,"lag":3}],"lastError":"disk full","logId":"0b3ad1a6-8a3e-4c5e-9d3c-2f54b1f0e7a1"}"#
        let (status, _) = try expectStableRoundTrip(HealthReply.self, following)
        #expect(status.upstreams == [UpstreamHealth(name: "reminder-planner", appliedSeq: 5, upstreamSeq: 8)] && status.lastError == "disk full")
        let frameBytes = try Reply.success(health)
        #expect(try JSONDecoder().decode(ReplyFrame<HealthReply>.self, from: frameBytes).data?.lastSeq == 42)
    }

    @Test func sessionListRequestAndReply() throws {
        let data = #"{"userId":"henning","from":"2026-11-23T00:00:00+01:00","until":"2026-11-24T00:00:00+01:00","activity":"workout"}"#
        let request = try pipeline(SessionListRequest.self, wireRequest("session.list", data)).get()
        #expect(request.from.description == "2026-11-22T23:00:00Z")
        #expect(request.activity == .workout)
        let (_, wire) = try expectStableRoundTrip(SessionListRequest.self, data)
        #expect(try jsonObject(wire) == jsonObject(#"{"activity":"workout","from":"2026-11-22T23:00:00Z","until":"2026-11-23T23:00:00Z","userId":"henning"}"#))
        let noActivity = try expectStableRoundTrip(SessionListRequest.self, #"{"userId":"u1","from":"2026-11-23T00:00:00Z","until":"2026-11-23T00:00:00Z"}"#)
        #expect(noActivity.value.activity == nil)

        let reply = "{\"sessions\":[\(Examples.storedSession)]}"
        let (list, _) = try expectStableRoundTrip(SessionListReply.self, reply)
        #expect(list.sessions.count == 1)
        #expect(try expectStableRoundTrip(SessionListReply.self, #"{"sessions":[]}"#).wire == #"{"sessions":[]}"#)
    }

    @Test func noAlcListRequestAndReply() throws {
        let data = #"{"userId":"henning","from":"2026-11-01","until":"2026-11-30"}"#
        let request = try pipeline(DayRangeRequest.self, wireRequest("noalc.list", data)).get()
        #expect(request.until.days(since: request.from) == 29)
        let (_, wire) = try expectStableRoundTrip(DayRangeRequest.self, data)
        #expect(try jsonObject(wire) == jsonObject(#"{"from":"2026-11-01","until":"2026-11-30","userId":"henning"}"#))
        let (list, _) = try expectStableRoundTrip(NoAlcListReply.self, "{\"entries\":[\(Examples.storedNoAlcEntry)]}")
        #expect(list.entries.first?.level == .wild)
    }

    @Test func dailySummaryRequestAndReply() throws {
        let data = #"{"userId":"henning","from":"2026-01-01","until":"2026-12-31","timeZone":"Europe/Berlin"}"#
        let request = try pipeline(DailySummaryRequest.self, wireRequest("daily.summary", data)).get()
        #expect(request.timeZone.identifier == "Europe/Berlin")
        let (_, wire) = try expectStableRoundTrip(DailySummaryRequest.self, data)
        #expect(try jsonObject(wire) == jsonObject(#"{"from":"2026-01-01","timeZone":"Europe/Berlin","until":"2026-12-31","userId":"henning"}"#))
        // 366 days, both ends inclusive, is the most.
        let leapYear = #"{"userId":"u1","from":"2024-01-01","until":"2024-12-31","timeZone":"Europe/Berlin"}"#
        #expect(try pipeline(DailySummaryRequest.self, wireRequest("daily.summary", leapYear)).get().until.days(since: LocalDay("2024-01-01")!) == 365)

        let reply = """
            {"days":[{"day":"2026-11-22","mindfulnessMinutes":20,"workoutMinutes":0,"noalc":"wild"},
                     {"day":"2026-11-23","mindfulnessMinutes":0,"workoutMinutes":45,"noalc":null}]}
            """
        let (summary, summaryWire) = try expectStableRoundTrip(DailySummaryReply.self, reply)
        #expect(summary.days.map(\.noalc) == [.wild, nil])
        #expect(summaryWire.contains(#""noalc":null"#))
        #expect(summary.days == (try JSONDecoder().decode(DailySummaryReply.self, from: frame(summaryWire))).days)
    }

    @Test func dailySummaryInUTCRoundTripsAsUTC() throws {
        let data = #"{"userId":"u1","from":"2026-11-01","until":"2026-11-30","timeZone":"UTC"}"#
        let (_, wire) = try expectStableRoundTrip(DailySummaryRequest.self, data)
        #expect(try jsonObject(wire) == jsonObject(#"{"from":"2026-11-01","timeZone":"UTC","until":"2026-11-30","userId":"u1"}"#))
    }
}
