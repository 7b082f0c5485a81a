import Foundation
import Testing
@testable import LHTSchema

@Suite("PROTOCOL.md event shapes round-trip")
struct EventRoundTripTests {
    @Test func sessionLoggedEnvelope() throws {
        let (envelope, wire) = try expectStableRoundTrip(EventEnvelope<StoredSession>.self, Examples.sessionLoggedEnvelope)
        #expect(envelope.v == 1)
        #expect(envelope.type == "session.logged")
        #expect(envelope.seq == 42)
        #expect(envelope.id.description == Examples.eventID.lowercased())
        #expect(envelope.time.description == "2026-11-23T17:00:01.250Z")
        #expect(envelope.source == "session-logger")
        #expect(envelope.topic == "session.logged.henning.workout")
        #expect(Topic(envelope.topic) == Topic(type: "session.logged", userId: envelope.data.userId, activity: envelope.data.activity))
        #expect(envelope.data == (try JSONDecoder().decode(StoredSession.self, from: frame(Examples.storedSession))))
        // The same bytes read as a generic envelope, and back.
        let generic = try JSONDecoder().decode(EventEnvelope<JSONValue>.self, from: frame(wire))
        #expect(generic.data["userId"] == .string("henning"))
        #expect(generic.data["source"] == .string("watch"))
        #expect(try jsonObject(String(decoding: try WireJSON.encode(generic), as: UTF8.self)) == jsonObject(wire))
    }

    /// One envelope type serves a reader of one payload and a reader of every type: the same bytes
    /// read as `ReceivedEvent` hold the same header and the same data, typed by the envelope's
    /// `type`, and write back the same; a type the reader does not know keeps its header.
    @Test func receivedEventIsTheEnvelopeTypedByItsType() throws {
        let typed = try JSONDecoder().decode(EventEnvelope<StoredSession>.self, from: frame(Examples.sessionLoggedEnvelope))
        let received: EventEnvelope<EventData?> = try WireJSON.decode(ReceivedEvent.self, from: frame(Examples.sessionLoggedEnvelope))
        #expect(received.data == .sessionLogged(typed.data))
        #expect([received.v, received.type, received.seq, received.id, received.time, received.source, received.topic] as [AnyHashable]
            == [typed.v, typed.type, typed.seq, typed.id, typed.time, typed.source, typed.topic] as [AnyHashable])
        #expect(try WireJSON.encode(received) == (try WireJSON.encode(typed)))

        let unknown = Examples.sessionLoggedEnvelope.replacingOccurrences(of: #""type":"session.logged""#, with: #""type":"session.rated""#)
        let newer = try WireJSON.decode(ReceivedEvent.self, from: frame(unknown))
        #expect(newer.type == "session.rated" && newer.seq == typed.seq && newer.data == nil)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ReceivedEvent.self, from: frame(unknown.replacingOccurrences(of: #""v":1,"#, with: "")))
        }
    }

    @Test func reminderDueEnvelopeWithGenericData() throws {
        let (envelope, _) = try expectStableRoundTrip(EventEnvelope<JSONValue>.self, Examples.reminderDueEnvelope)
        #expect(envelope.topic == "reminder.due.henning.workout")
        #expect(envelope.id.description == Examples.eventID.lowercased())
        #expect(envelope.time.description == "2026-11-23T17:00:00Z")
        #expect(envelope.data["title"] == .null)
        #expect(envelope.data["late"] == .bool(false))
        #expect(envelope.data["localTime"]?.stringValue == "18:00")
        #expect(envelope.data["nested"] == .array([.number(1), .number(2.5), .number(-3), .bool(true), .object(["a": .array([])])]))
        let built = EventEnvelope(type: envelope.type, seq: envelope.seq, id: envelope.id, time: envelope.time,
                                  source: envelope.source, topic: envelope.topic, data: envelope.data)
        #expect(try WireJSON.encode(built) == (try WireJSON.encode(envelope)))
    }

    @Test func jsonValueRoundTrips() throws {
        let text = #"{"a":null,"b":true,"c":false,"d":0,"e":-12,"f":2.5,"g":"s\u00e9\n","h":[],"i":{},"j":[[{"k":[1]}]],"l":9007199254740993}"#
        let (value, _) = try expectEqualRoundTrip(JSONValue.self, text)
        #expect(value["a"] == .null)
        #expect(value["e"]?.intValue == -12)
        #expect(value["f"]?.intValue == nil)
        #expect(value["g"]?.stringValue == "s\u{e9}\n")
        #expect(value["b"]?.boolValue == true)
        #expect(value["zz"] == nil)
        #expect(try JSONDecoder().decode(JSONValue.self, from: frame("-0")) == .number(0))
    }

    @Test func eventsSince() throws {
        let (request, wire) = try expectStableRoundTrip(EventsSinceRequest.self, #"{"after":41,"limit":100}"#)
        #expect(request.after == 41 && request.limit == 100)
        #expect(wire == #"{"after":41,"limit":100}"#)
        let defaults = try pipeline(EventsSinceRequest.self, frame(#"{"v":1,"op":"events.since"}"#)).get()
        #expect(defaults.after == 0 && defaults.limit == 500)
        let empty = try pipeline(EventsSinceRequest.self, wireRequest("events.since", "{}")).get()
        #expect(empty.after == 0 && empty.limit == 500)
        for limit in [1, 1000] {
            #expect(try pipeline(EventsSinceRequest.self, wireRequest("events.since", #"{"limit":\#(limit)}"#)).get().limit == limit)
        }

        let reply = "{\"events\":[\(Examples.sessionLoggedEnvelope),\(Examples.reminderDueEnvelope)],\"lastSeq\":43,\"logId\":\"0b3ad1a6-8a3e-4c5e-9d3c-2f54b1f0e7a1\"}"
        let (decoded, _) = try expectEqualRoundTrip(EventsSinceReply.self, reply)
        #expect(decoded.lastSeq == 43)
        #expect(decoded.logId == RecordID("0b3ad1a6-8a3e-4c5e-9d3c-2f54b1f0e7a1"))
        // Each envelope's data is decoded once, into the type the catalog gives its event type.
        guard case .sessionLogged(let session) = decoded.events[0].data, case .reminderDue(let due) = decoded.events[1].data else {
            Issue.record("events not typed: \(decoded.events.map(\.data))")
            return
        }
        #expect(session.activity == .workout && due.occurrence.activity == .workout)
        #expect(decoded.events.map(\.seq) == [42, 7])
        #expect(decoded.events.map(\.topic) == ["session.logged.henning.workout", "reminder.due.henning.workout"])
    }
}
