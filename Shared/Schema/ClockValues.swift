import Foundation

/// `clock.set` data.
public struct ClockSetRequest: Codable, Sendable {
    public let now: Instant
    public init(now: Instant) { self.now = now }
}

/// `clock.advance` data: forward only.
public struct ClockAdvanceRequest: Codable, Sendable {
    public let seconds: Int64

    public init(seconds: Int64) { self.seconds = seconds }

    enum CodingKeys: String, CodingKey { case seconds }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        seconds = try container.decodeWholeNumber(Int64.self, forKey: .seconds)
        guard (0...(400 * 86_400)).contains(seconds) else {
            throw DecodingError.dataCorruptedError(forKey: .seconds, in: container, debugDescription: "seconds must be 0 or more (at most 400 days)")
        }
    }
}

/// `clock.get`, `clock.set` and `clock.advance` reply.
public struct ClockReply: Codable, Sendable {
    public let now: Instant
    /// How many occurrences were decided on the way (set and advance only).
    public let decided: Int?

    public init(now: Instant, decided: Int?) {
        self.now = now
        self.decided = decided
    }
}
