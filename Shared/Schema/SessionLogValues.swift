import Foundation

/// `session.log` data. Rules over two fields name the later one (`end` before `start` → `data.end`).
/// "start at most 5 minutes in the future" needs the wall clock, so the session logger checks it.
public struct SessionLogRequest: Codable, Sendable, Hashable {
    public let id: RecordID?
    public let userId: UserID
    public let activity: Activity
    public let start: Instant
    public let end: Instant
    public let source: String?

    public static let longestSessionSeconds: Int64 = 24 * 3600

    public init(id: RecordID? = nil, userId: UserID, activity: Activity, start: Instant, end: Instant, source: String? = nil) {
        self.id = id
        self.userId = userId
        self.activity = activity
        self.start = start
        self.end = end
        self.source = source
    }

    enum CodingKeys: String, CodingKey { case id, userId, activity, start, end, source }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(RecordID.self, forKey: .id)
        userId = try container.decode(UserID.self, forKey: .userId)
        activity = try container.decode(Activity.self, forKey: .activity)
        guard activity.isSession else {
            throw DecodingError.dataCorruptedError(forKey: .activity, in: container, debugDescription: "a session is mindfulness or workout; NoAlc is logged with noalc.log")
        }
        start = try container.decode(Instant.self, forKey: .start)
        end = try container.decode(Instant.self, forKey: .end)
        guard end >= start else {
            throw DecodingError.dataCorruptedError(forKey: .end, in: container, debugDescription: "end must not be before start")
        }
        guard end.milliseconds(since: start) <= SessionLogRequest.longestSessionSeconds * 1000 else {
            throw DecodingError.dataCorruptedError(forKey: .end, in: container, debugDescription: "a session is at most 24 hours long")
        }
        source = try container.decodeTextIfPresent(forKey: .source)
        try checkSource(source, in: container, key: .source)
    }
}

/// `noalc.log` data. `day` is 2000-01-01 at the earliest (checked here) and tomorrow in UTC at the
/// latest (`checkDay(today:)`: the wall clock is the session logger's input, so the rule stays pure).
public struct NoAlcLogRequest: Codable, Sendable, Hashable {
    public let id: RecordID?
    public let userId: UserID
    public let day: LocalDay
    public let level: NoAlcLevel
    public let source: String?

    public init(id: RecordID? = nil, userId: UserID, day: LocalDay, level: NoAlcLevel, source: String? = nil) {
        self.id = id
        self.userId = userId
        self.day = day
        self.level = level
        self.source = source
    }

    /// The first day a NoAlc entry may name. Days are bounded because the streak walks from the
    /// first logged day on: an entry in year 1 must not make every later request walk 2000 years.
    public static let earliestDay = LocalDay(year: 2000, month: 1, day: 1)!

    /// The last day a NoAlc entry may name when it is `today` in UTC: tomorrow, so a user anywhere
    /// east of UTC can log their own today.
    public static func latestDay(today: LocalDay) -> LocalDay { today.adding(days: 1) }

    static let dayRule = "day must be from 2000-01-01 through tomorrow (UTC)"

    /// The day rule's upper bound, with the wall clock's UTC day as input: `invalid_argument` naming
    /// `data.day` when `day` is after tomorrow (or before 2000-01-01, for a value built in code).
    public func checkDay(today: LocalDay) throws(WireError) {
        guard day >= Self.earliestDay, day <= Self.latestDay(today: today) else {
            throw WireError.invalid("data.day", "\(Self.dayRule), got \(day)")
        }
    }

    enum CodingKeys: String, CodingKey { case id, userId, day, level, source }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(RecordID.self, forKey: .id)
        userId = try container.decode(UserID.self, forKey: .userId)
        day = try container.decode(LocalDay.self, forKey: .day)
        guard day >= Self.earliestDay else {
            throw DecodingError.dataCorruptedError(forKey: .day, in: container, debugDescription: "\(Self.dayRule), got \(day)")
        }
        level = try container.decode(NoAlcLevel.self, forKey: .level)
        source = try container.decodeTextIfPresent(forKey: .source)
        try checkSource(source, in: container, key: .source)
    }
}

private func checkSource<Key: CodingKey>(_ source: String?, in container: KeyedDecodingContainer<Key>, key: Key) throws {
    if let source, source.utf8.count > 200 {
        throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "source is at most 200 bytes")
    }
}

/// A stored session, as `session.logged` and `session.list` carry it.
public struct StoredSession: Codable, Sendable, Hashable {
    public let id: RecordID
    public let userId: UserID
    public let activity: Activity
    public let start: Instant
    public let end: Instant
    public let source: String?
    public let loggedAt: Instant

    public init(id: RecordID, userId: UserID, activity: Activity, start: Instant, end: Instant, source: String?, loggedAt: Instant) {
        self.id = id
        self.userId = userId
        self.activity = activity
        self.start = start
        self.end = end
        self.source = source
        self.loggedAt = loggedAt
    }

    enum CodingKeys: String, CodingKey { case id, userId, activity, start, end, source, loggedAt }

    public func encode(to encoder: Encoder) throws {
        try encoder.encodeEveryMember(keyedBy: CodingKeys.self, [.id: id, .userId: userId, .activity: activity, .start: start, .end: end,
                                                                  .source: source, .loggedAt: loggedAt])
    }
}

/// A stored NoAlc entry, as `noalc.logged` and `noalc.list` carry it.
public struct StoredNoAlcEntry: Codable, Sendable, Hashable {
    public let id: RecordID
    public let userId: UserID
    public let day: LocalDay
    public let level: NoAlcLevel
    public let drinks: Int
    public let source: String?
    public let loggedAt: Instant

    public init(id: RecordID, userId: UserID, day: LocalDay, level: NoAlcLevel, source: String?, loggedAt: Instant) {
        self.id = id
        self.userId = userId
        self.day = day
        self.level = level
        drinks = level.drinks
        self.source = source
        self.loggedAt = loggedAt
    }

    enum CodingKeys: String, CodingKey { case id, userId, day, level, drinks, source, loggedAt }

    public func encode(to encoder: Encoder) throws {
        try encoder.encodeEveryMember(keyedBy: CodingKeys.self, [.id: id, .userId: userId, .day: day, .level: level, .drinks: drinks,
                                                                  .source: source, .loggedAt: loggedAt])
    }
}

/// Writes `members` in order, a nil as null: a stored record always has every field, where the
/// synthesized conformance would leave a nil out (`encodeIfPresent`).
extension Encoder {
    fileprivate func encodeEveryMember<Key: CodingKey>(keyedBy: Key.Type, _ members: KeyValuePairs<Key, any Encodable>) throws {
        var container = container(keyedBy: Key.self)
        for (key, value) in members { try container.encode(value, forKey: key) }
    }
}

/// Reply to `session.log` and `noalc.log`.
public struct LogReceipt: Codable, Sendable, Hashable {
    public let id: RecordID
    public let seq: Int64
    public let duplicate: Bool

    public init(id: RecordID, seq: Int64, duplicate: Bool) {
        self.id = id
        self.seq = seq
        self.duplicate = duplicate
    }
}
