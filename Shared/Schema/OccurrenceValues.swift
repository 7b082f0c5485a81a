import Foundation

public enum OccurrenceStatus: String, Codable, Sendable, CaseIterable {
    case scheduled, cancelled, fired, suppressed, missed, skipped

    public init(from decoder: Decoder) throws { self = try decodeWireEnum(decoder) }
}

/// One occurrence of a reminder. Its identity is `<reminderId>@<at in UTC, seconds, Z>`.
public struct Occurrence: Codable, Sendable, Hashable {
    public let reminderId: RecordID
    public let userId: UserID
    public let activity: Activity
    public let at: Instant
    /// The wall-clock time it really happens (03:30 for a 02:30 rule shifted by DST).
    public let localTime: LocalTime
    /// The rule day it belongs to, even where DST pushed `at` past midnight.
    public let day: LocalDay
    public let weekday: Weekday
    /// `at − lookbackHours`; absent for NoAlc, whose coverage is by target day.
    public let windowStart: Instant?
    public var status: OccurrenceStatus
    /// The session or NoAlc entry id that covers it.
    public var cause: RecordID?
    public let targetDay: LocalDay?

    public init(reminderId: RecordID, userId: UserID, activity: Activity, at: Instant, localTime: LocalTime, day: LocalDay,
                weekday: Weekday, windowStart: Instant?, status: OccurrenceStatus, cause: RecordID?, targetDay: LocalDay?) {
        self.reminderId = reminderId
        self.userId = userId
        self.activity = activity
        self.at = at
        self.localTime = localTime
        self.day = day
        self.weekday = weekday
        self.windowStart = windowStart
        self.status = status
        self.cause = cause
        self.targetDay = targetDay
    }

    public var identity: String { Occurrence.identity(reminderId: reminderId, at: at) }

    public static func identity(reminderId: RecordID, at: Instant) -> String { "\(reminderId)@\(at.secondsText)" }
}

/// The data of `reminder.due`: the occurrence plus what the notifier needs to render it.
public struct DueOccurrence: Codable, Sendable, Hashable {
    public let occurrence: Occurrence
    public let timeZone: ZoneID
    public let locale: NotificationLocale
    public let title: String?
    public let body: String?
    public let late: Bool
    public let test: Bool

    public init(occurrence: Occurrence, timeZone: ZoneID, locale: NotificationLocale, title: String?, body: String?, late: Bool, test: Bool) {
        self.occurrence = occurrence
        self.timeZone = timeZone
        self.locale = locale
        self.title = title
        self.body = body
        self.late = late
        self.test = test
    }

    enum ExtraKeys: String, CodingKey { case timeZone, locale, title, body, late, test }

    /// Flat on the wire: the occurrence's fields and these beside them.
    public init(from decoder: Decoder) throws {
        occurrence = try Occurrence(from: decoder)
        let container = try decoder.container(keyedBy: ExtraKeys.self)
        timeZone = try container.decode(ZoneID.self, forKey: .timeZone)
        locale = try container.decode(NotificationLocale.self, forKey: .locale)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        body = try container.decodeIfPresent(String.self, forKey: .body)
        late = try container.decode(Bool.self, forKey: .late)
        test = try container.decode(Bool.self, forKey: .test)
    }

    /// Written by hand because it is flat (see `init(from:)`) and `title` and `body` are explicit nulls
    /// when unset; the synthesized conformance would nest the occurrence and omit a nil.
    public func encode(to encoder: Encoder) throws {
        try occurrence.encode(to: encoder)
        var container = encoder.container(keyedBy: ExtraKeys.self)
        try container.encode(timeZone, forKey: .timeZone)
        try container.encode(locale, forKey: .locale)
        try container.encode(title, forKey: .title)
        try container.encode(body, forKey: .body)
        try container.encode(late, forKey: .late)
        try container.encode(test, forKey: .test)
    }
}

/// `reminder.upcoming` data.
public struct UpcomingRequest: Codable, Sendable {
    public let userId: UserID
    public let days: Int

    public static let dayRange = 1...31

    public init(userId: UserID, days: Int = 7) {
        self.userId = userId
        self.days = days
    }

    enum CodingKeys: String, CodingKey { case userId, days }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decode(UserID.self, forKey: .userId)
        days = try container.decodeWholeNumberIfPresent(Int.self, forKey: .days) ?? 7
        guard Self.dayRange.contains(days) else {
            throw DecodingError.dataCorruptedError(forKey: .days, in: container, debugDescription: "days must be 1...31")
        }
    }
}

public struct UpcomingReply: Codable, Sendable {
    public let occurrences: [Occurrence]
    public init(occurrences: [Occurrence]) { self.occurrences = occurrences }
}

/// `reminder.restore` data.
public struct RestoreRequest: Codable, Sendable {
    public let reminderId: RecordID
    public let at: Instant
    public init(reminderId: RecordID, at: Instant) {
        self.reminderId = reminderId
        self.at = at
    }
}

/// `reminder.test` data.
public struct ReminderTestRequest: Codable, Sendable {
    public let reminderId: RecordID
    public init(reminderId: RecordID) { self.reminderId = reminderId }
}
