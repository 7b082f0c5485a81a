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

    /// The parts copied into one buffer: every stored event names its topic, and interpolating
    /// them cost half as much again (about 1,500 instructions a topic against 1,000).
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

/// Any JSON value: for events whose payload a reader does not know, and for printing.
public enum JSONValue: Codable, Sendable, Hashable, EventPayload {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    /// Written by hand: a JSON value is itself on the wire, where the synthesized conformance of an
    /// enum would wrap each case in an object named after it.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 9e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value):
            // Keys sorted, so the same value always encodes to the same bytes.
            var object = encoder.container(keyedBy: DynamicKey.self)
            for key in value.keys.sorted() { try object.encode(value[key]!, forKey: DynamicKey(key)) }
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var intValue: Int64? {
        if case .number(let value) = self, value.rounded() == value { return Int64(value) }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}

/// A coding key for dictionary-shaped objects.
struct DynamicKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// `events.since` request and reply.
public struct EventsSinceRequest: Codable, Sendable, Hashable {
    public let after: Int64
    public let limit: Int

    public init(after: Int64 = 0, limit: Int = 500) {
        self.after = after
        self.limit = limit
    }

    enum CodingKeys: String, CodingKey { case after, limit }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        after = try container.decodeWholeNumberIfPresent(Int64.self, forKey: .after) ?? 0
        limit = try container.decodeWholeNumberIfPresent(Int.self, forKey: .limit) ?? 500
        guard after >= 0 else { throw DecodingError.dataCorruptedError(forKey: .after, in: container, debugDescription: "after must be 0 or more") }
        guard (1...1000).contains(limit) else { throw DecodingError.dataCorruptedError(forKey: .limit, in: container, debugDescription: "limit must be 1...1000") }
    }
}

public struct EventsSinceReply: Codable, Sendable, Hashable {
    public let events: [ReceivedEvent]
    public let lastSeq: Int64
    /// The identity of the publisher's event log, made with its database: a follower that finds
    /// another one knows the seqs it holds belong to a different history (a wiped or replaced
    /// database), even when the new history is longer than the old.
    public let logId: RecordID?

    public init(events: [ReceivedEvent], lastSeq: Int64, logId: RecordID?) {
        self.events = events
        self.lastSeq = lastSeq
        self.logId = logId
    }
}

/// `health` reply.
public struct HealthReply: Codable, Sendable {
    public let service: String
    public let version: String
    public let uptimeSeconds: Int64
    public let lastSeq: Int64
    public let counters: [String: Int64]
    /// Each upstream this service follows: how far it has applied and how far the upstream is.
    public let upstreams: [UpstreamHealth]
    /// The last error the service logged, for `lht status`; nil while there was none.
    public let lastError: String?
    /// The identity of the service's event log (`EventsSinceReply.logId`).
    public let logId: RecordID?
    /// The tzdata version whose zone rules the service uses (planner and streak service only).
    public let tzdata: String?
    /// The instance that answered (`--instance`, PROTOCOL "Cluster").
    public let instance: String?
    /// The share of users whose time-driven work this instance does now (PROTOCOL "Cluster": owners).
    public let owns: Ownership?

    enum CodingKeys: String, CodingKey { case service, version, uptimeSeconds, lastSeq, counters, upstreams, lastError, logId, tzdata, instance, owns }

    /// Written by hand to write the counters in name order, so two replies with the same counts are the
    /// same bytes; the synthesized conformance writes a dictionary in its (per-process) hash order.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(service, forKey: .service)
        try container.encode(version, forKey: .version)
        try container.encode(uptimeSeconds, forKey: .uptimeSeconds)
        try container.encode(lastSeq, forKey: .lastSeq)
        var counts = container.nestedContainer(keyedBy: DynamicKey.self, forKey: .counters)
        for name in counters.keys.sorted() { try counts.encode(counters[name]!, forKey: DynamicKey(name)) }
        try container.encode(upstreams, forKey: .upstreams)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(logId, forKey: .logId)
        try container.encodeIfPresent(tzdata, forKey: .tzdata)
        try container.encodeIfPresent(instance, forKey: .instance)
        try container.encodeIfPresent(owns, forKey: .owns)
    }

    /// `upstreams` and `lastError` came later: a reply without them reads as none.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        service = try container.decode(String.self, forKey: .service)
        version = try container.decode(String.self, forKey: .version)
        uptimeSeconds = try container.decode(Int64.self, forKey: .uptimeSeconds)
        lastSeq = try container.decode(Int64.self, forKey: .lastSeq)
        counters = try container.decode([String: Int64].self, forKey: .counters)
        upstreams = try container.decodeIfPresent([UpstreamHealth].self, forKey: .upstreams) ?? []
        lastError = try container.decodeIfPresent(String.self, forKey: .lastError)
        logId = try container.decodeIfPresent(RecordID.self, forKey: .logId)
        tzdata = try container.decodeIfPresent(String.self, forKey: .tzdata)
        instance = try container.decodeIfPresent(String.self, forKey: .instance)
        owns = try container.decodeIfPresent(Ownership.self, forKey: .owns)
    }

    public init(service: String, version: String, uptimeSeconds: Int64, lastSeq: Int64, counters: [String: Int64],
                upstreams: [UpstreamHealth] = [], lastError: String? = nil, logId: RecordID? = nil, tzdata: String? = nil,
                instance: String? = nil, owns: Ownership? = nil) {
        self.service = service
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.lastSeq = lastSeq
        self.counters = counters
        self.upstreams = upstreams
        self.lastError = lastError
        self.logId = logId
        self.tzdata = tzdata
        self.instance = instance
        self.owns = owns
    }
}

/// `health.owns`: this instance does the time-driven work of `partitions` of the `of` partitions
/// users hash into; over a service's live instances the `partitions` add up to `of`.
public struct Ownership: Codable, Sendable, Hashable {
    /// The fixed number of partitions users hash into.
    public static let partitionCount = 64

    public let partitions: Int
    public let of: Int
    /// Seconds since the instance last confirmed its partition leases with the shared database;
    /// nil where no leases are held (one instance on SQLite) or none was confirmed yet.
    public let leaseAgeSeconds: Double?

    public init(partitions: Int, of: Int = Ownership.partitionCount, leaseAgeSeconds: Double? = nil) {
        self.partitions = partitions
        self.of = of
        self.leaseAgeSeconds = leaseAgeSeconds
    }
}

/// One followed upstream in `health`: `lag = upstreamSeq − appliedSeq` events.
public struct UpstreamHealth: Codable, Sendable, Hashable {
    public let name: String
    public let appliedSeq: Int64
    public let upstreamSeq: Int64
    public let lag: Int64

    public init(name: String, appliedSeq: Int64, upstreamSeq: Int64) {
        self.name = name
        self.appliedSeq = appliedSeq
        self.upstreamSeq = upstreamSeq
        lag = max(0, upstreamSeq - appliedSeq)
    }
}

extension KeyedDecodingContainer {
    /// JSONDecoder reports a number that does not fit the type (1.5 or 1e20 for an Int) with an
    /// error that has no coding path; this names the key instead.
    public func decodeWholeNumberIfPresent<Number: Decodable & FixedWidthInteger>(_ type: Number.Type, forKey key: Key) throws -> Number? {
        do {
            return try decodeIfPresent(type, forKey: key)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(key.stringValue) must be a whole number in range")
            }
            throw error
        } catch {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(key.stringValue) must be a whole number in range")
        }
    }

    public func decodeWholeNumber<Number: Decodable & FixedWidthInteger>(_ type: Number.Type, forKey key: Key) throws -> Number {
        guard let value = try decodeWholeNumberIfPresent(type, forKey: key) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "\(key.stringValue) is required"))
        }
        return value
    }
}
