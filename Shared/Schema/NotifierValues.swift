import Foundation

/// A button on a notification, as its `actions` array carries it.
public struct NotificationAction: Codable, Sendable, Hashable {
    public let id: String
    public let title: String
    /// False for the NoAlc levels: they log from the notification without opening the app.
    public let opensApp: Bool

    public init(id: String, title: String, opensApp: Bool) {
        self.id = id
        self.title = title
        self.opensApp = opensApp
    }
}

/// What the notifier sent for one occurrence: the data of a `notify` event and an entry of
/// `notification.list`.
public struct Notification: Codable, Sendable, Hashable {
    /// The occurrence identity (`<reminderId>@<at>`), or `<reminderId>@test-<uuid>` for a test firing.
    public let notificationId: String
    /// The seq of the `notify` event it was published with.
    public let seq: Int64
    public let userId: UserID
    public let activity: Activity
    public let title: String
    public let body: String
    public let category: String
    public let actions: [NotificationAction]
    public let deepLink: String
    /// NoAlc only: the day its quick actions log for.
    public let targetDay: LocalDay?
    public let reminderId: RecordID
    /// The occurrence instant.
    public let scheduledFor: Instant
    public let sentAt: Instant
    public let locale: NotificationLocale
    public let test: Bool

    public init(notificationId: String, seq: Int64, userId: UserID, activity: Activity, title: String, body: String,
                category: String, actions: [NotificationAction], deepLink: String, targetDay: LocalDay?,
                reminderId: RecordID, scheduledFor: Instant, sentAt: Instant, locale: NotificationLocale, test: Bool) {
        self.notificationId = notificationId
        self.seq = seq
        self.userId = userId
        self.activity = activity
        self.title = title
        self.body = body
        self.category = category
        self.actions = actions
        self.deepLink = deepLink
        self.targetDay = targetDay
        self.reminderId = reminderId
        self.scheduledFor = scheduledFor
        self.sentAt = sentAt
        self.locale = locale
        self.test = test
    }
}

/// `notification.list` data: one user's notifications with a seq above `after`.
public struct NotificationListRequest: Codable, Sendable {
    public let userId: UserID
    public let after: Int64

    public init(userId: UserID, after: Int64 = 0) {
        self.userId = userId
        self.after = after
    }

    enum CodingKeys: String, CodingKey { case userId, after }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        userId = try container.decode(UserID.self, forKey: .userId)
        after = try container.decodeWholeNumberIfPresent(Int64.self, forKey: .after) ?? 0
        guard after >= 0 else {
            throw DecodingError.dataCorruptedError(forKey: .after, in: container, debugDescription: "after must be 0 or more")
        }
    }
}

public struct NotificationListReply: Codable, Sendable {
    public let notifications: [Notification]
    public init(notifications: [Notification]) { self.notifications = notifications }
}

/// `notification.action` data. `notificationId` is an occurrence identity, not a UUID, so only
/// its length is checked here; whether it names anything is the notifier's `not_found`.
public struct NotificationActionRequest: Codable, Sendable, Hashable {
    public let notificationId: String
    public let actionId: String

    /// Longer than any identity the notifier makes (a test identity is 78 bytes).
    public static let longestNotificationId = 200
    public static let longestActionId = 100

    public init(notificationId: String, actionId: String) {
        self.notificationId = notificationId
        self.actionId = actionId
    }

    enum CodingKeys: String, CodingKey { case notificationId, actionId }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        notificationId = try container.decodeText(forKey: .notificationId)
        guard (1...Self.longestNotificationId).contains(notificationId.utf8.count) else {
            throw DecodingError.dataCorruptedError(forKey: .notificationId, in: container,
                                                   debugDescription: "notificationId must be 1-\(Self.longestNotificationId) bytes")
        }
        actionId = try container.decodeText(forKey: .actionId)
        guard (1...Self.longestActionId).contains(actionId.utf8.count) else {
            throw DecodingError.dataCorruptedError(forKey: .actionId, in: container,
                                                   debugDescription: "actionId must be 1-\(Self.longestActionId) bytes")
        }
    }
}

/// `notification.action` reply: the stored entry for a NoAlc level, the deep link for `open.*`.
public struct NotificationActionReply: Codable, Sendable, Hashable {
    public let entry: StoredNoAlcEntry?
    public let deepLink: String?

    public init(entry: StoredNoAlcEntry) {
        self.entry = entry
        deepLink = nil
    }

    public init(deepLink: String) {
        entry = nil
        self.deepLink = deepLink
    }
}
