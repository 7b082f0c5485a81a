import Foundation

/// `session.list`: sessions whose start lies in `[from, until)`.
public struct SessionListRequest: Codable, Sendable {
    public let userId: UserID
    public let from: Instant
    public let until: Instant
    public let activity: Activity?

    public init(userId: UserID, from: Instant, until: Instant, activity: Activity? = nil) {
        self.userId = userId
        self.from = from
        self.until = until
        self.activity = activity
    }

    enum CodingKeys: String, CodingKey { case userId, from, until, activity }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decode(UserID.self, forKey: .userId)
        from = try container.decode(Instant.self, forKey: .from)
        until = try container.decode(Instant.self, forKey: .until)
        guard until >= from else { throw DecodingError.dataCorruptedError(forKey: .until, in: container, debugDescription: "until must not be before from") }
        activity = try container.decodeIfPresent(Activity.self, forKey: .activity)
    }
}

public struct SessionListReply: Codable, Sendable {
    public let sessions: [StoredSession]
    public init(sessions: [StoredSession]) { self.sessions = sessions }
}

/// A range of local days, both ends inclusive, at most `maxDays` long.
public struct DayRangeRequest: Codable, Sendable {
    public let userId: UserID
    public let from: LocalDay
    public let until: LocalDay

    public init(userId: UserID, from: LocalDay, until: LocalDay) {
        self.userId = userId
        self.from = from
        self.until = until
    }

    enum CodingKeys: String, CodingKey { case userId, from, until }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decode(UserID.self, forKey: .userId)
        from = try container.decode(LocalDay.self, forKey: .from)
        until = try container.decode(LocalDay.self, forKey: .until)
        guard until >= from else { throw DecodingError.dataCorruptedError(forKey: .until, in: container, debugDescription: "until must not be before from") }
        guard until.days(since: from) < 366 * 10 else { throw DecodingError.dataCorruptedError(forKey: .until, in: container, debugDescription: "a range is at most 3660 days") }
    }
}

public struct NoAlcListReply: Codable, Sendable {
    public let entries: [StoredNoAlcEntry]
    public init(entries: [StoredNoAlcEntry]) { self.entries = entries }
}

/// `daily.summary`: at most 366 days, in the zone given.
public struct DailySummaryRequest: Codable, Sendable {
    public let userId: UserID
    public let from: LocalDay
    public let until: LocalDay
    public let timeZone: ZoneID

    public static let maxDays = 366

    public init(userId: UserID, from: LocalDay, until: LocalDay, timeZone: ZoneID) {
        self.userId = userId
        self.from = from
        self.until = until
        self.timeZone = timeZone
    }

    enum CodingKeys: String, CodingKey { case userId, from, until, timeZone }

    public init(from decoder: Decoder) throws {
        // The same days as any range, narrowed to a year.
        let range = try DayRangeRequest(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard range.until.days(since: range.from) < DailySummaryRequest.maxDays else {
            throw DecodingError.dataCorruptedError(forKey: .until, in: container, debugDescription: "a summary covers at most \(DailySummaryRequest.maxDays) days")
        }
        userId = range.userId
        from = range.from
        until = range.until
        timeZone = try container.decode(ZoneID.self, forKey: .timeZone)
    }
}

public struct DailySummaryDay: Codable, Sendable, Hashable {
    public let day: LocalDay
    public let mindfulnessMinutes: Int
    public let workoutMinutes: Int
    public let noalc: NoAlcLevel?

    public init(day: LocalDay, mindfulnessMinutes: Int, workoutMinutes: Int, noalc: NoAlcLevel?) {
        self.day = day
        self.mindfulnessMinutes = mindfulnessMinutes
        self.workoutMinutes = workoutMinutes
        self.noalc = noalc
    }

    enum CodingKeys: String, CodingKey { case day, mindfulnessMinutes, workoutMinutes, noalc }

    /// Written by hand because `noalc` is an explicit null on a day without an entry;
    /// the synthesized conformance would omit a nil (encodeIfPresent).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(day, forKey: .day)
        try container.encode(mindfulnessMinutes, forKey: .mindfulnessMinutes)
        try container.encode(workoutMinutes, forKey: .workoutMinutes)
        try container.encode(noalc, forKey: .noalc)
    }
}

public struct DailySummaryReply: Codable, Sendable {
    public let days: [DailySummaryDay]
    public init(days: [DailySummaryDay]) { self.days = days }
}
