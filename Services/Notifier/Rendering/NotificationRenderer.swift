import LHTSchema

/// What tapping an offered action means; the notifier performs it (`notification.action`).
public enum QuickAction: Sendable, Hashable {
    /// Log this level for the notification's target day, without opening the app.
    case logNoAlc(NoAlcLevel)
    /// Reply with this deep link; the client opens the app there.
    case open(deepLink: String)
}

/// Texts, actions and deep links of SEMANTICS §4.
public enum NotificationRenderer {
    /// Renders one occurrence into the notification sent for it; the identity, seq and stamps are
    /// the caller's. The reminder's own title and body win where set (each on its own; blank counts
    /// as unset, since an empty banner helps nobody); otherwise the locale's text.
    ///
    /// For NoAlc the body asks about `targetDay`: "today" when it is the occurrence day (or later),
    /// "yesterday" otherwise. A NoAlc call without a target day falls back to the day before the
    /// occurrence — the default 09:00 reminder's — so quick actions always have a day to log.
    public static func render(
        notificationId: String, seq: Int64, userId: UserID, reminderId: RecordID, scheduledFor: Instant, sentAt: Instant,
        test: Bool, activity: Activity, locale: NotificationLocale, customTitle: String?, customBody: String?,
        occurrenceDay: LocalDay, targetDay: LocalDay?
    ) -> Notification {
        let target: LocalDay? = activity == .noalc ? (targetDay ?? occurrenceDay.adding(days: -1)) : nil
        let defaults = defaultTexts(activity: activity, locale: locale, asksAboutToday: target.map { $0 >= occurrenceDay } ?? false)
        return Notification(
            notificationId: notificationId, seq: seq, userId: userId, activity: activity,
            title: nonBlank(customTitle) ?? defaults.title,
            body: nonBlank(customBody) ?? defaults.body,
            category: activity.rawValue,
            actions: actions(for: activity, locale: locale),
            deepLink: deepLink(for: activity, targetDay: target),
            targetDay: target, reminderId: reminderId, scheduledFor: scheduledFor, sentAt: sentAt, locale: locale, test: test)
    }

    /// The activity's buttons. NoAlc titles are the same in both locales (they are level names).
    public static func actions(for activity: Activity, locale: NotificationLocale) -> [NotificationAction] {
        switch activity {
        case .noalc:
            return [
                NotificationAction(id: "noalc.steady", title: "💧 Steady", opensApp: false),
                NotificationAction(id: "noalc.easy", title: "✨ Easy", opensApp: false),
                NotificationAction(id: "noalc.wild", title: "💥 Wild", opensApp: false),
            ]
        case .mindfulness:
            return [NotificationAction(
                id: "open.meditation", title: locale == .de ? "Meditation starten" : "Start Meditation", opensApp: true)]
        case .workout:
            return [NotificationAction(
                id: "open.workout", title: locale == .de ? "Workout starten" : "Start Workout", opensApp: true)]
        }
    }

    /// The activity's deep link; NoAlc's names the day to log (nil gives the bare `lht://noalc`).
    public static func deepLink(for activity: Activity, targetDay: LocalDay?) -> String {
        switch activity {
        case .mindfulness: "lht://open/meditation"
        case .workout: "lht://open/workout"
        case .noalc: targetDay.map { "lht://noalc?day=\($0)" } ?? "lht://noalc"
        }
    }

    /// What `actionId` does on this notification; nil when it does not offer that action
    /// (the notifier answers `not_found`), so a stored notification is the only authority.
    public static func resolve(actionId: String, in notification: Notification) -> QuickAction? {
        guard let action = notification.actions.first(where: { $0.id == actionId }) else { return nil }
        if action.id.hasPrefix(noAlcPrefix), let level = NoAlcLevel(rawValue: String(action.id.dropFirst(noAlcPrefix.count))) {
            return .logNoAlc(level)
        }
        return action.opensApp ? .open(deepLink: notification.deepLink) : nil
    }

    private static let noAlcPrefix = "noalc."

    private static func nonBlank(_ text: String?) -> String? {
        guard let text, text.contains(where: { !$0.isWhitespace }) else { return nil }
        return text
    }

    private static func defaultTexts(activity: Activity, locale: NotificationLocale, asksAboutToday: Bool) -> (title: String, body: String) {
        switch (activity, locale) {
        case (.mindfulness, .de): ("Zeit für deine Meditation", "Nimm dir einen Moment zum Atmen 🌿")
        case (.mindfulness, .en): ("Time to meditate", "Take a moment to breathe 🌿")
        case (.workout, .de): ("Zeit für dein Workout", "Zeit für dein tägliches Workout! 💪")
        case (.workout, .en): ("Time for your workout", "Time for your daily workout! 💪")
        case (.noalc, .de): ("NoAlc Check-in", asksAboutToday ? "Wie war heute?" : "Wie war gestern?")
        case (.noalc, .en): ("NoAlc check-in", asksAboutToday ? "How was today?" : "How was yesterday?")
        }
    }
}

/// The per-user, per-activity notification rate limit (SEMANTICS §4, seed `001_…`).
public enum RateLimit {
    /// Whether a notification for an occurrence at `occurrenceAt` may be sent, given the
    /// occurrence instant of the last one actually *sent* for the same user and activity.
    ///
    /// Measured between occurrence instants (event time), so a manual clock drives it
    /// deterministically. `minutes <= 0` turns the limit off. Exactly `minutes` apart is allowed;
    /// an occurrence before the last sent one is dropped, as the seed's
    /// `timeIntervalSince(lastTrigger) < 3600` does. Callers must update `lastSentAt` only for
    /// sent notifications, so that a dropped one does not restart the window.
    public static func allows(occurrenceAt: Instant, lastSentAt: Instant?, minutes: Int) -> Bool {
        guard minutes > 0, let lastSentAt else { return true }
        let (window, overflow) = Int64(minutes).multipliedReportingOverflow(by: 60_000)
        return !overflow && occurrenceAt.milliseconds(since: lastSentAt) >= window
    }
}
