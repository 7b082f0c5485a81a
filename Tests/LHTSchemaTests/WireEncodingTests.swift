import Foundation
import Testing
@testable import LHTSchema

/// The wire encoder (a streaming Codable encoder, and hand-written fields for the hottest types)
/// must say exactly what Foundation's JSONEncoder says, up to key order.
@Suite("wire encoding matches JSONEncoder")
struct WireEncodingTests {
    func same<Value: Encodable>(_ value: Value, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let ours = try JSONDecoder().decode(JSONValue.self, from: WireJSON.encode(value))
        let foundation = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
        #expect(ours == foundation, sourceLocation: sourceLocation)
    }

    static let at = Instant(rfc3339: "2026-11-23T17:00:00.250Z")!

    static func occurrence(noalc: Bool, cause: RecordID?) -> Occurrence {
        Occurrence(reminderId: RecordID(), userId: UserID("henning")!, activity: noalc ? .noalc : .workout, at: at,
                   localTime: LocalTime("18:00")!, day: LocalDay("2026-11-23")!, weekday: .mon,
                   windowStart: noalc ? nil : at.adding(seconds: -43_200), status: .cancelled, cause: cause,
                   targetDay: noalc ? LocalDay("2026-11-22") : nil)
    }

    @Test func handWrittenOccurrencesMatchTheirCodableForm() throws {
        for noalc in [false, true] {
            for cause in [nil, RecordID()] {
                let occurrence = Self.occurrence(noalc: noalc, cause: cause)
                try same(occurrence)
                try same(DueOccurrence(occurrence: occurrence, timeZone: ZoneID("Europe/Berlin")!, locale: .de,
                                       title: noalc ? nil : "Los \"geht's\"\n", body: nil, late: noalc, test: !noalc))
            }
        }
    }

    @Test func handWrittenStreakStatesMatchTheirCodableForm() throws {
        for lastLogged in [nil, LocalDay("2026-11-22")] {
            try same(StreakState(userId: UserID("u-1")!, asOf: LocalDay("2026-11-23")!, policy: "classic", streakDays: 12, rewardsEarned: 3,
                                 rewardsUsed: 1, rewardsLost: 1, rewardsAvailable: 1, lastLoggedDay: lastLogged, todayLogged: lastLogged == nil))
        }
    }

    @Test func streamedValuesMatch() throws {
        let session = StoredSession(id: RecordID(), userId: UserID("u-1")!, activity: .mindfulness, start: Self.at,
                                    end: Self.at.adding(seconds: 900), source: "tab\there \\ \u{1}", loggedAt: Self.at)
        try same(session)
        try same(StoredSession(id: RecordID(), userId: UserID("u-1")!, activity: .workout, start: Self.at, end: Self.at, source: nil, loggedAt: Self.at))
        try same(LogReceipt(id: RecordID(), seq: 42, duplicate: true))
        try same(EventEnvelope(type: "session.logged", seq: 7, time: Self.at, source: "session-logger", topic: "t", data: session))
        let reminder = Reminder(id: RecordID(), userId: UserID("u1")!, activity: .noalc, time: LocalTime("09:00")!, weekdays: [.sun, .mon],
                                lookbackHours: 24, enabled: true, title: nil, body: "ü 🌿", createdAt: Self.at)
        try same(ReminderPutReply(reminder: reminder, warnings: ["w"]))
        try same(ReminderPutReply(reminder: reminder, warnings: nil))
        try same(ReminderChange.put(reminder))
        // The planner replies to a put without warnings with its `reminder.changed` data, encoded once.
        #expect(try WireJSON.encode(ReminderPutReply(reminder: reminder, warnings: nil)) == WireJSON.encode(ReminderChange.put(reminder)))
        try same(ReminderChange.deleted(ReminderDeleted(id: reminder.id, userId: reminder.userId, activity: .noalc)))
        try same(ReminderChange.deleted(ReminderDeleted(id: reminder.id, userId: nil, activity: nil)))
        try same(ReminderListReply(reminders: [reminder, reminder]))
        try same(HealthReply(service: "s", version: "1", uptimeSeconds: 3, lastSeq: 9, counters: ["b": 2, "a": 1]))
        try same(JSONValue.object(["x": .array([.null, .bool(true), .number(-2.5), .string("/")]), "y": .object([:])]))
        try same(WireError(.invalidArgument, "bad", field: "data.start"))
        try same([[1, 2], [], [3]])
    }

    /// Exact bytes, key order included, of values whose conformance is synthesized (CalendarGetRequest,
    /// without its derived `days`) or written by hand for explicit nulls.
    @Test func exactBytesOfSynthesizedAndExplicitNullEncodings() throws {
        func wire<Value: Encodable>(_ value: Value) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        #expect(try wire(CalendarGetRequest(userId: UserID("u1")!, month: "2026-02")!) == #"{"userId":"u1","month":"2026-02"}"#)
        #expect(try wire(CalendarReply.Day(day: LocalDay("2026-02-01")!, level: nil, color: nil))
            == #"{"day":"2026-02-01","level":null,"color":null}"#)
        #expect(try wire(DailySummaryDay(day: LocalDay("2026-02-01")!, mindfulnessMinutes: 5, workoutMinutes: 0, noalc: nil))
            == #"{"day":"2026-02-01","mindfulnessMinutes":5,"workoutMinutes":0,"noalc":null}"#)
        let id = RecordID("3f2b8c1e-0000-4000-8000-000000000000")!
        #expect(try wire(StoredNoAlcEntry(id: id, userId: UserID("u1")!, day: LocalDay("2026-02-01")!, level: .easy, source: nil, loggedAt: Self.at))
            == #"{"id":"3f2b8c1e-0000-4000-8000-000000000000","userId":"u1","day":"2026-02-01","level":"easy","drinks":\#(NoAlcLevel.easy.drinks),"source":null,"loggedAt":"2026-11-23T17:00:00.250Z"}"#)
        #expect(try wire(StreakState(userId: UserID("u1")!, asOf: LocalDay("2026-02-01")!, policy: "seed", streakDays: 0, rewardsEarned: 0,
                                     rewardsUsed: 0, rewardsLost: 0, rewardsAvailable: 0, lastLoggedDay: nil, todayLogged: false))
            == #"{"userId":"u1","asOf":"2026-02-01","policy":"seed","streakDays":0,"rewardsEarned":0,"rewardsUsed":0,"rewardsLost":0,"rewardsAvailable":0,"lastLoggedDay":null,"todayLogged":false}"#)
    }

    /// Legal Encoder uses a single forward pass cannot write: the encoder notices and falls back.
    struct OutOfOrder: Encodable {
        enum Keys: String, CodingKey { case a, b, z }
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .a)
            try container.encode(1, forKey: .b)
            try nested.encode(2, forKey: .z)
        }
    }

    struct WithSuper: Encodable {
        enum Keys: String, CodingKey { case own }
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            let parent = container.superEncoder()
            try container.encode("x", forKey: .own)
            var inner = parent.singleValueContainer()
            try inner.encode(7)
        }
    }

    struct WithFoundationValues: Encodable {
        let data = Data([0, 1, 2, 250])
        let url = URL(string: "lht://open/workout")!
    }

    @Test func patternsAStreamCannotFollowFallBackToFoundation() throws {
        try same(OutOfOrder())
        try same(WithSuper())
        try same(WithFoundationValues())
        try same([OutOfOrder(), OutOfOrder()])
    }

    @Test func eventFramesAroundEncodedDataMatchTheEnvelope() throws {
        let occurrence = Self.occurrence(noalc: true, cause: nil)
        let id = RecordID()
        let frame = EventEnvelope<Occurrence>.frame(type: "reminder.cancelled", seq: 3, id: id, time: Self.at, source: "reminder-planner",
                                                    topic: "reminder.cancelled.henning.noalc", encodedData: try WireJSON.encode(occurrence))
        let envelope = EventEnvelope(type: "reminder.cancelled", seq: 3, id: id, time: Self.at, source: "reminder-planner",
                                     topic: "reminder.cancelled.henning.noalc", data: occurrence)
        #expect(try JSONDecoder().decode(JSONValue.self, from: frame) == JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(envelope)))
    }

    /// A payload written into the envelope in place is the same bytes as its own JSON copied in.
    @Test func payloadsWrittenInPlaceAreTheBytesOfTheirJSON() throws {
        let id = RecordID()
        func same(_ payload: some WireJSONWritable) {
            func frame(_ write: (_ topic: String) -> Data) -> String { String(decoding: write("t.u1.noalc"), as: UTF8.self) }
            let inPlace = frame { EventEnvelope<JSONValue>.frame(type: "t", seq: 9, id: id, time: Self.at, source: "s", topic: $0, data: payload) }
            let copied = frame {
                EventEnvelope<JSONValue>.frame(type: "t", seq: 9, id: id, time: Self.at, source: "s", topic: $0, encodedData: WireJSON.encode(writable: payload))
            }
            #expect(inPlace == copied)
            #expect(inPlace.hasSuffix(#""data":"# + String(decoding: WireJSON.encode(writable: payload), as: UTF8.self) + "}"))
        }
        same(Self.occurrence(noalc: true, cause: nil))
        same(StoredNoAlcEntry(id: id, userId: UserID("u1")!, day: LocalDay("2026-02-01")!, level: .easy, source: "say \"hi\"", loggedAt: Self.at))
        same(StreakState(userId: UserID("u1")!, asOf: LocalDay("2026-02-01")!, policy: "seed", streakDays: 3, rewardsEarned: 0,
                         rewardsUsed: 0, rewardsLost: 0, rewardsAvailable: 0, lastLoggedDay: nil, todayLogged: false))
    }

    /// The object writer at its edges: integers at their limits, days outside four-digit years (the
    /// rare text `description` makes), strings that need escapes, and more bytes than its first buffer.
    @Test func theObjectWriterMatchesTheTextFormsAtTheirEdges() throws {
        let escapes = "say \"hi\"\\ \u{1}\n" + String(repeating: "é", count: 40)
        var object = JSONObjectWriter(capacity: 16)
        let days = [LocalDay(ordinal: -1_000_000), LocalDay(ordinal: 3_000_000), LocalDay("0001-01-01")!, LocalDay("9999-12-31")!]
        // Names are static strings: one field each.
        object.field("d0", days[0])
        object.field("d1", days[1])
        object.field("d2", days[2])
        object.field("d3", days[3])
        object.field("none", nil as LocalDay?)
        object.field("min", Int64.min)
        object.field("max", Int64.max)
        object.field("zero", Int64(0))
        object.field("minusOne", Int64(-1))
        object.field("text", escapes)
        object.field("yes", true)
        let written = String(decoding: object.finished(), as: UTF8.self)
        let expected = "{" + days.enumerated().map { #""d\#($0.offset)":"\#($0.element.description)""# }.joined(separator: ",")
            + #","none":null,"min":-9223372036854775808,"max":9223372036854775807,"zero":0,"minusOne":-1,"#
            + #""text":"say \"hi\"\\ \u0001\n"# + String(repeating: "é", count: 40) + #"","yes":true}"#
        #expect(written == expected)
        #expect(days[0].description.hasPrefix("-") && days[1].description.count > 10)
    }

    @Test func newIdsAreVersion7DistinctAndTimeOrdered() throws {
        let before = UInt64(Date().timeIntervalSince1970 * 1000)
        let ids = (0..<10_000).map { _ in RecordID() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(100) {
            let text = id.description
            #expect(Array(text)[14] == "7")
            #expect("89ab".contains(Array(text)[19]))
            #expect(RecordID(text) == id)
            // The first 48 bits are the Unix time in milliseconds it was made at.
            let milliseconds = try #require(UInt64(text.prefix(13).replacingOccurrences(of: "-", with: ""), radix: 16))
            #expect(milliseconds >= before && milliseconds <= UInt64(Date().timeIntervalSince1970 * 1000))
        }
        // An id made in a later millisecond sorts after, as text too (what an index of them orders by).
        let lastMillisecond = UInt64(Date().timeIntervalSince1970 * 1000)
        while UInt64(Date().timeIntervalSince1970 * 1000) <= lastMillisecond {}
        let later = RecordID()
        #expect(ids.allSatisfy { $0 < later && $0.description < later.description })
    }
}
