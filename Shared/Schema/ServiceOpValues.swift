import Foundation

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
