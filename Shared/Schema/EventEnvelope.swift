import Foundation

/// A topic frame, `<type>.<userId>.<activity>`; the type itself may contain dots (`reminder.due`).
public struct Topic: Hashable, Sendable, CustomStringConvertible {
    public let type: String
    public let userId: UserID
    public let activity: Activity

    public init(type: String, userId: UserID, activity: Activity) {
        self.type = type
        self.userId = userId
        self.activity = activity
    }

    /// Parses from the right: the last two parts are userId and activity (neither contains a dot).
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, let activity = Activity(rawValue: String(parts[parts.count - 1])),
              let userId = UserID(String(parts[parts.count - 2])) else { return nil }
        let type = parts[0..<(parts.count - 2)].joined(separator: ".")
        guard !type.isEmpty, !parts[0..<(parts.count - 2)].contains(where: \.isEmpty) else { return nil }
        self.init(type: type, userId: userId, activity: activity)
    }

    /// The parts copied into one buffer rather than interpolated: every stored event names its
    /// topic (decision [0009](../../docs/decisions/0009-hand-written-json-codec.md)).
    public var description: String {
        var type = type, user = userId.rawValue, activity = activity.rawValue  // withUTF8 takes a var
        return type.withUTF8 { type in
            user.withUTF8 { user in
                activity.withUTF8 { activity in
                    String(unsafeUninitializedCapacity: type.count + user.count + activity.count + 2) { buffer in
                        var end = 0
                        for part in [type, user, activity] {
                            if end > 0 { buffer[end] = UInt8(ascii: "."); end += 1 }
                            end = buffer[end...].initialize(fromContentsOf: part)
                        }
                        return end
                    }
                }
            }
        }
    }

    /// The prefix that selects one user's events of a type: `notify.henning.`.
    public static func prefix(type: String, userId: UserID) -> String { "\(type).\(userId)." }
}

/// The event envelope frame, as a publisher writes it and a reader receives it, live or from
/// `events.since`. `topic` is carried inside too, so `events.since` can return the same bytes.
/// A reader of one event type names its payload (`EventEnvelope<StoredSession>`); a reader of every
/// type takes `ReceivedEvent`, whose data is typed by the envelope's `type`.
public struct EventEnvelope<Payload: EventPayload>: Codable, Sendable {
    public let v: Int
    public let type: String
    public let seq: Int64
    public let id: RecordID
    public let time: Instant
    public let source: String
    public let topic: String
    public let data: Payload

    public init(type: String, seq: Int64, id: RecordID = RecordID(), time: Instant, source: String, topic: String, data: Payload) {
        v = wireVersion
        self.type = type
        self.seq = seq
        self.id = id
        self.time = time
        self.source = source
        self.topic = topic
        self.data = data
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: EnvelopeKey.self)
        v = try container.decode(Int.self, forKey: .v)
        type = try container.decode(String.self, forKey: .type)
        seq = try container.decode(Int64.self, forKey: .seq)
        id = try container.decode(RecordID.self, forKey: .id)
        time = try container.decode(Instant.self, forKey: .time)
        source = try container.decode(String.self, forKey: .source)
        topic = try container.decode(String.self, forKey: .topic)
        data = try Payload.decode(from: container, eventType: type)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: EnvelopeKey.self)
        try container.encode(v, forKey: .v)
        try container.encode(type, forKey: .type)
        try container.encode(seq, forKey: .seq)
        try container.encode(id, forKey: .id)
        try container.encode(time, forKey: .time)
        try container.encode(source, forKey: .source)
        try container.encode(topic, forKey: .topic)
        try data.encode(to: &container)
    }
}

extension EventEnvelope: Equatable where Payload: Equatable {}
extension EventEnvelope: Hashable where Payload: Hashable {}

/// An envelope's members.
public enum EnvelopeKey: String, CodingKey { case v, type, seq, id, time, source, topic, data }

/// What an envelope's `data` can be. A payload of one type reads and writes itself (the default
/// for `Codable` payloads); `EventData?` is read as the envelope's `type` says.
public protocol EventPayload: Sendable {
    static func decode(from envelope: KeyedDecodingContainer<EnvelopeKey>, eventType: String) throws -> Self
    func encode(to envelope: inout KeyedEncodingContainer<EnvelopeKey>) throws
}

extension EventPayload where Self: Codable {
    public static func decode(from envelope: KeyedDecodingContainer<EnvelopeKey>, eventType: String) throws -> Self {
        try envelope.decode(Self.self, forKey: .data)
    }

    public func encode(to envelope: inout KeyedEncodingContainer<EnvelopeKey>) throws {
        try envelope.encode(self, forKey: .data)
    }
}

/// The heartbeat a publisher sends when it has published nothing for a second (PROTOCOL "Events"):
/// not stored, no seq, so followers notice a gap or a silent publisher without polling.
public struct Heartbeat: Codable, Sendable, Hashable {
    public static let topic = "heartbeat"
    public static let intervalMilliseconds: Int64 = 1000

    public let v: Int
    public let type: String
    public let source: String
    public let lastSeq: Int64
    public let time: Instant
    /// The identity of the publisher's event log (see `EventsSinceReply.logId`).
    public let logId: RecordID?

    public init(source: String, lastSeq: Int64, time: Instant, logId: RecordID) {
        v = wireVersion
        type = Self.topic
        self.source = source
        self.lastSeq = lastSeq
        self.time = time
        self.logId = logId
    }
}
