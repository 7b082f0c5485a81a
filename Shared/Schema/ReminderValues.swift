import Foundation

/// A user's planner settings.
public struct UserSettings: Codable, Sendable, Hashable {
    public let userId: UserID
    public let timeZone: ZoneID
    public let locale: NotificationLocale
    public let paused: Bool

    public init(userId: UserID, timeZone: ZoneID, locale: NotificationLocale, paused: Bool) {
        self.userId = userId
        self.timeZone = timeZone
        self.locale = locale
        self.paused = paused
    }
}

/// `user.put` data.
public struct UserPutRequest: Codable, Sendable {
    public let userId: UserID
    public let timeZone: ZoneID
    public let locale: NotificationLocale
    public let paused: Bool?

    public init(userId: UserID, timeZone: ZoneID, locale: NotificationLocale, paused: Bool? = nil) {
        self.userId = userId
        self.timeZone = timeZone
        self.locale = locale
        self.paused = paused
    }
}

/// Requests that name only a user.
public struct UserRequest: Codable, Sendable {
    public let userId: UserID
    public init(userId: UserID) { self.userId = userId }
}

/// Requests that name only a reminder.
public struct ReminderIDRequest: Codable, Sendable {
    public let id: RecordID
    public init(id: RecordID) { self.id = id }
}

/// `reminder.put` data; absent fields take the per-activity defaults.
public struct ReminderPutRequest: Codable, Sendable, Hashable {
    public let id: RecordID?
    public let userId: UserID
    public let activity: Activity
    public let time: LocalTime?
    public let weekdays: [Weekday]?
    public let lookbackHours: Int?
    public let enabled: Bool?
    public let title: String?
    public let body: String?

    public static let lookbackRange = 1...48
    static let longestText = 500

    public init(id: RecordID? = nil, userId: UserID, activity: Activity, time: LocalTime? = nil, weekdays: [Weekday]? = nil,
                lookbackHours: Int? = nil, enabled: Bool? = nil, title: String? = nil, body: String? = nil) {
        self.id = id
        self.userId = userId
        self.activity = activity
        self.time = time
        self.weekdays = weekdays
        self.lookbackHours = lookbackHours
        self.enabled = enabled
        self.title = title
        self.body = body
    }

    enum CodingKeys: String, CodingKey { case id, userId, activity, time, weekdays, lookbackHours, enabled, title, body }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(RecordID.self, forKey: .id)
        userId = try container.decode(UserID.self, forKey: .userId)
        activity = try container.decode(Activity.self, forKey: .activity)
        time = try container.decodeIfPresent(LocalTime.self, forKey: .time)
        weekdays = try container.decodeIfPresent([Weekday].self, forKey: .weekdays)
        lookbackHours = try container.decodeWholeNumberIfPresent(Int.self, forKey: .lookbackHours)
        if let lookbackHours, !Self.lookbackRange.contains(lookbackHours) {
            throw DecodingError.dataCorruptedError(forKey: .lookbackHours, in: container, debugDescription: "lookbackHours must be 1...48")
        }
        enabled = try container.decodeIfPresent(Bool.self, forKey: .enabled)
        title = try container.decodeTextIfPresent(forKey: .title)
        body = try container.decodeTextIfPresent(forKey: .body)
        for (key, text) in [(CodingKeys.title, title), (.body, body)] where (text?.utf8.count ?? 0) > Self.longestText {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(key.stringValue) is at most \(Self.longestText) bytes")
        }
    }
}

/// A stored reminder, defaults filled in.
public struct Reminder: Codable, Sendable, Hashable {
    public let id: RecordID
    public let userId: UserID
    public let activity: Activity
    public let time: LocalTime
    /// In week order, no repeats.
    public let weekdays: [Weekday]
    public let lookbackHours: Int
    public let enabled: Bool
    public let title: String?
    public let body: String?
    /// Occurrences exist from this instant on.
    public let createdAt: Instant

    public init(id: RecordID, userId: UserID, activity: Activity, time: LocalTime, weekdays: [Weekday], lookbackHours: Int,
                enabled: Bool, title: String?, body: String?, createdAt: Instant) {
        self.id = id
        self.userId = userId
        self.activity = activity
        self.time = time
        // In week order without repeats; a mask, since this runs for every reminder loaded at start.
        var seen: UInt8 = 0
        for day in weekdays { seen |= 1 << day.index }
        self.weekdays = Weekday.allCases.filter { seen & (1 << $0.index) != 0 }
        self.lookbackHours = lookbackHours
        self.enabled = enabled
        self.title = title
        self.body = body
        self.createdAt = createdAt
    }

    /// Per-activity defaults (seed 003: mindfulness 20:00, workout 18:00, NoAlc 09:00; seed 000 Q2: look-back 12 h, NoAlc 24 h).
    public static func defaultTime(for activity: Activity) -> LocalTime {
        switch activity {
        case .mindfulness: LocalTime(hour: 20, minute: 0)!
        case .workout: LocalTime(hour: 18, minute: 0)!
        case .noalc: LocalTime(hour: 9, minute: 0)!
        }
    }

    public static func defaultLookbackHours(for activity: Activity) -> Int { activity == .noalc ? 24 : 12 }

    enum CodingKeys: String, CodingKey { case id, userId, activity, time, weekdays, lookbackHours, enabled, title, body, createdAt }

    /// Written by hand because `title` and `body` are emitted as null when unset; the synthesized conformance would omit a nil (encodeIfPresent).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(userId, forKey: .userId)
        try container.encode(activity, forKey: .activity)
        try container.encode(time, forKey: .time)
        try container.encode(weekdays, forKey: .weekdays)
        try container.encode(lookbackHours, forKey: .lookbackHours)
        try container.encode(enabled, forKey: .enabled)
        try container.encode(title, forKey: .title)
        try container.encode(body, forKey: .body)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// `reminder.put` reply: the stored reminder, with `warnings` when something was adjusted.
public struct ReminderPutReply: Codable, Sendable {
    public let reminder: Reminder
    public let warnings: [String]?

    public init(reminder: Reminder, warnings: [String]?) {
        self.reminder = reminder
        self.warnings = warnings
    }

    public init(from decoder: Decoder) throws {
        reminder = try Reminder(from: decoder)
        warnings = try decoder.container(keyedBy: WarningKey.self).decodeIfPresent([String].self, forKey: .warnings)
    }

    /// Written by hand because the reply is flat: the reminder's fields with `warnings` beside them
    /// (absent when there are none), where the synthesized conformance would nest the reminder.
    public func encode(to encoder: Encoder) throws {
        try reminder.encode(to: encoder)
        var container = encoder.container(keyedBy: WarningKey.self)
        try container.encodeIfPresent(warnings, forKey: .warnings)
    }

    enum WarningKey: String, CodingKey { case warnings }
}

public struct ReminderListReply: Codable, Sendable {
    public let reminders: [Reminder]
    public init(reminders: [Reminder]) { self.reminders = reminders }
}

/// `reminder.delete` reply and the data of a deleting `reminder.changed`.
public struct ReminderDeleted: Codable, Sendable, Hashable {
    public let id: RecordID
    public let userId: UserID?
    public let activity: Activity?
    public let deleted: Bool

    public init(id: RecordID, userId: UserID?, activity: Activity?) {
        self.id = id
        self.userId = userId
        self.activity = activity
        deleted = true
    }
}

/// The data of `reminder.changed`: the reminder after a put, or the deletion.
public enum ReminderChange: Codable, Sendable, Hashable {
    case put(Reminder)
    case deleted(ReminderDeleted)

    private enum Keys: String, CodingKey { case deleted }

    public init(from decoder: Decoder) throws {
        let deleted = try decoder.container(keyedBy: Keys.self).decodeIfPresent(Bool.self, forKey: .deleted) ?? false
        self = deleted ? .deleted(try ReminderDeleted(from: decoder)) : .put(try Reminder(from: decoder))
    }

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .put(let reminder): try reminder.encode(to: encoder)
        case .deleted(let deletion): try deletion.encode(to: encoder)
        }
    }
}
