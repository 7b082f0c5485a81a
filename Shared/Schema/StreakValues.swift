import Foundation

/// `streak.get` data. Without `asOf` the service uses today in `timeZone` (the user's), or in its
/// `--time-zone` when that is absent too; with `asOf`, `timeZone` changes nothing.
public struct StreakGetRequest: Codable, Sendable, Hashable {
    public let userId: UserID
    public let asOf: LocalDay?
    public let timeZone: ZoneID?

    public init(userId: UserID, asOf: LocalDay? = nil, timeZone: ZoneID? = nil) {
        self.userId = userId
        self.asOf = asOf
        self.timeZone = timeZone
    }

    /// The day the streak is computed for: `asOf`, else today at `now` in `timeZone`, else in `serviceZone`.
    public func day(now: Instant, serviceZone: ZoneID) -> LocalDay {
        asOf ?? now.local(in: timeZone ?? serviceZone).day
    }
}

/// Read by hand: `streak.get` is answered from memory, and decoding through `Decodable` was a large
/// part of the loop's time from reading the request to sending the reply (decision
/// [0009](../../docs/decisions/0009-hand-written-json-codec.md)).
extension StreakGetRequest: WireJSONReadable {
    init(members: JSONMembers) throws {
        self.init(userId: try members.required("userId"), asOf: try members.optional("asOf"), timeZone: try members.optional("timeZone"))
    }
}

extension StreakGetRequest {
    public static func read(from frame: Data, head: RequestHead) throws(WireError) -> StreakGetRequest {
        try readRequestData(Self.self, from: frame, head: head)
    }
}

/// A user's streak as `streak.get` returns it and `streak.updated` carries it (SEMANTICS §5), and
/// as StreakRules' `Streak.compute` returns it.
///
/// `policy` is the policy's name (`seed`, `classic`): the schema names it but does not know the rules.
public struct StreakState: Codable, Sendable, Hashable {
    public let userId: UserID
    /// The day the streak is computed for ("today"); entries after it are ignored.
    public let asOf: LocalDay
    public let policy: String
    /// Consecutive days counted at the end day, healed days included.
    public let streakDays: Int
    /// Milestones that gave a joker (a milestone with 3 on hand gives nothing and is not counted).
    public let rewardsEarned: Int
    /// Jokers spent healing an easy or unlogged day (or a wild one under `classic`).
    public let rewardsUsed: Int
    /// Jokers taken as wild-day penalties (always 0 under `classic`).
    public let rewardsLost: Int
    /// Jokers on hand: always `rewardsEarned − rewardsUsed − rewardsLost`, within 0...3.
    public let rewardsAvailable: Int
    /// The latest logged day not after `asOf`; nil when nothing is logged.
    public let lastLoggedDay: LocalDay?
    /// Whether `asOf` itself has an entry (it then counts; an unlogged today never hurts).
    public let todayLogged: Bool

    public init(userId: UserID, asOf: LocalDay, policy: String, streakDays: Int, rewardsEarned: Int, rewardsUsed: Int,
                rewardsLost: Int, rewardsAvailable: Int, lastLoggedDay: LocalDay?, todayLogged: Bool) {
        self.userId = userId
        self.asOf = asOf
        self.policy = policy
        self.streakDays = streakDays
        self.rewardsEarned = rewardsEarned
        self.rewardsUsed = rewardsUsed
        self.rewardsLost = rewardsLost
        self.rewardsAvailable = rewardsAvailable
        self.lastLoggedDay = lastLoggedDay
        self.todayLogged = todayLogged
    }

    enum CodingKeys: String, CodingKey {
        case userId, asOf, policy, streakDays, rewardsEarned, rewardsUsed, rewardsLost, rewardsAvailable, lastLoggedDay, todayLogged
    }

    /// Written by hand because `lastLoggedDay` is an explicit null when nothing is logged, as PROTOCOL.md
    /// lists it; the synthesized conformance would omit a nil (encodeIfPresent).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(asOf, forKey: .asOf)
        try container.encode(policy, forKey: .policy)
        try container.encode(streakDays, forKey: .streakDays)
        try container.encode(rewardsEarned, forKey: .rewardsEarned)
        try container.encode(rewardsUsed, forKey: .rewardsUsed)
        try container.encode(rewardsLost, forKey: .rewardsLost)
        try container.encode(rewardsAvailable, forKey: .rewardsAvailable)
        try container.encode(lastLoggedDay, forKey: .lastLoggedDay)
        try container.encode(todayLogged, forKey: .todayLogged)
    }
}

/// `calendar.get` data: one month, `YYYY-MM`.
public struct CalendarGetRequest: Codable, Sendable, Hashable {
    public let userId: UserID
    public let month: String
    /// The month's first through last day.
    public let days: ClosedRange<LocalDay>

    public init?(userId: UserID, month: String) {
        guard let days = CalendarGetRequest.days(of: month) else { return nil }
        self.userId = userId
        self.month = month
        self.days = days
    }

    /// `days` follows from `month` and is not on the wire.
    enum CodingKeys: String, CodingKey { case userId, month }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decode(UserID.self, forKey: .userId)
        month = try container.decodeText(forKey: .month)
        guard let days = CalendarGetRequest.days(of: month) else {
            throw DecodingError.dataCorruptedError(forKey: .month, in: container,
                                                   debugDescription: "expected a month as YYYY-MM, got \"\(month.prefix(40))\"")
        }
        self.days = days
    }

    /// Exactly `YYYY-MM` with a real month, or nil.
    static func days(of month: String) -> ClosedRange<LocalDay>? {
        let bytes = Array(month.utf8)
        guard bytes.count == 7, bytes[4] == UInt8(ascii: "-"),
              let year = Digits.value(bytes[0..<4]), let number = Digits.value(bytes[5..<7]),
              let first = LocalDay(year: year, month: number, day: 1) else { return nil }
        return first...first.adding(days: LocalDay.daysIn(month: number, year: year) - 1)
    }
}

/// `calendar.get` reply: every day of the month, level and colour `null` where nothing is logged.
public struct CalendarReply: Codable, Sendable, Hashable {
    public let days: [Day]

    public init(days: [Day]) { self.days = days }

    public struct Day: Codable, Sendable, Hashable {
        public let day: LocalDay
        public let level: NoAlcLevel?
        public let color: String?

        public init(day: LocalDay, level: NoAlcLevel?, color: String?) {
            self.day = day
            self.level = level
            self.color = color
        }

        enum CodingKeys: String, CodingKey { case day, level, color }

        /// Written by hand because `level` and `color` are explicit nulls on an unlogged day;
        /// the synthesized conformance would omit a nil (encodeIfPresent).
        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(day, forKey: .day)
            try container.encode(level, forKey: .level)
            try container.encode(color, forKey: .color)
        }
    }
}
