import LHTSchema
import NotificationRendering
import Testing

let occurrenceDay = LocalDay("2026-11-23")!
let dayBefore = LocalDay("2026-11-22")!
let reminderId = RecordID("3f2b8c1e-0000-4000-8000-000000000000")!
let scheduledFor = Instant(rfc3339: "2026-11-23T08:00:00Z")!
let sentAt = Instant(rfc3339: "2026-11-23T08:00:01Z")!

/// Renders with a fixed identity, seq and stamps: most tests here look only at what the renderer decides.
func rendered(activity: Activity, locale: NotificationLocale, customTitle: String?, customBody: String?,
              occurrenceDay: LocalDay, targetDay: LocalDay?) -> Notification {
    NotificationRenderer.render(
        notificationId: "\(reminderId)@\(scheduledFor)", seq: 7, userId: UserID("u1")!, reminderId: reminderId,
        scheduledFor: scheduledFor, sentAt: sentAt, test: false, activity: activity, locale: locale,
        customTitle: customTitle, customBody: customBody, occurrenceDay: occurrenceDay, targetDay: targetDay)
}

/// One cell pair of the SEMANTICS §4 table.
struct TextCase: Sendable, CustomTestStringConvertible {
    let activity: Activity
    let locale: NotificationLocale
    let targetDay: LocalDay?
    let title: String
    let body: String
    var testDescription: String { "\(activity) \(locale) target=\(targetDay.map(String.init(describing:)) ?? "-")" }
}

/// Every cell of the §4 table, in both locales; NoAlc once per body (by target day).
let textCases: [TextCase] = [
    TextCase(activity: .mindfulness, locale: .de, targetDay: nil,
             title: "Zeit für deine Meditation", body: "Nimm dir einen Moment zum Atmen 🌿"),
    TextCase(activity: .mindfulness, locale: .en, targetDay: nil,
             title: "Time to meditate", body: "Take a moment to breathe 🌿"),
    TextCase(activity: .workout, locale: .de, targetDay: nil,
             title: "Zeit für dein Workout", body: "Zeit für dein tägliches Workout! 💪"),
    TextCase(activity: .workout, locale: .en, targetDay: nil,
             title: "Time for your workout", body: "Time for your daily workout! 💪"),
    TextCase(activity: .noalc, locale: .de, targetDay: dayBefore, title: "NoAlc Check-in", body: "Wie war gestern?"),
    TextCase(activity: .noalc, locale: .de, targetDay: occurrenceDay, title: "NoAlc Check-in", body: "Wie war heute?"),
    TextCase(activity: .noalc, locale: .en, targetDay: dayBefore, title: "NoAlc check-in", body: "How was yesterday?"),
    TextCase(activity: .noalc, locale: .en, targetDay: occurrenceDay, title: "NoAlc check-in", body: "How was today?"),
]

/// The planner's target-day rule (SEMANTICS §2), restated here so the test derives its input.
func targetDay(ruleTime: LocalTime, day: LocalDay) -> LocalDay {
    ruleTime >= LocalTime(hour: 18, minute: 0)! ? day : day.adding(days: -1)
}

@Suite("Notification texts")
struct NotificationTextTests {
    @Test(arguments: textCases)
    func defaultTexts(_ c: TextCase) {
        let content = rendered(
            activity: c.activity, locale: c.locale, customTitle: nil, customBody: nil,
            occurrenceDay: occurrenceDay, targetDay: c.targetDay)
        #expect(content.title == c.title)
        #expect(content.body == c.body)
        #expect(content.category == c.activity.rawValue)
        #expect(content.targetDay == c.targetDay)
    }

    @Test("identity, seq and stamps are the caller's, unchanged")
    func identityPassesThrough() {
        let notification = NotificationRenderer.render(
            notificationId: "n@1", seq: 42, userId: UserID("henning")!, reminderId: reminderId, scheduledFor: scheduledFor,
            sentAt: sentAt, test: true, activity: .workout, locale: .de, customTitle: nil, customBody: nil,
            occurrenceDay: occurrenceDay, targetDay: nil)
        #expect(notification.notificationId == "n@1" && notification.seq == 42 && notification.userId == UserID("henning")!)
        #expect(notification.reminderId == reminderId && notification.scheduledFor == scheduledFor && notification.sentAt == sentAt)
        #expect(notification.test && notification.activity == .workout && notification.locale == .de)
    }

    @Test("emoji are the exact scalars of the table")
    func emojiBytes() {
        let mindful = rendered(activity: .mindfulness, locale: .en, customTitle: nil, customBody: nil,
                                                  occurrenceDay: occurrenceDay, targetDay: nil)
        #expect(Array(mindful.body.unicodeScalars.suffix(1)).map(\.value) == [0x1F33F])
        let workout = rendered(activity: .workout, locale: .de, customTitle: nil, customBody: nil,
                                                  occurrenceDay: occurrenceDay, targetDay: nil)
        #expect(Array(workout.body.unicodeScalars.suffix(1)).map(\.value) == [0x1F4AA])
    }

    @Test("the reminder's own title and body win, each independently", arguments: Activity.allCases, NotificationLocale.allCases)
    func customOverrides(activity: Activity, locale: NotificationLocale) {
        func render(_ title: String?, _ body: String?) -> Notification {
            rendered(activity: activity, locale: locale, customTitle: title, customBody: body,
                                        occurrenceDay: occurrenceDay, targetDay: activity == .noalc ? dayBefore : nil)
        }
        let plain = render(nil, nil)
        let both = render("Meine Zeit", "Los geht's")
        #expect(both.title == "Meine Zeit" && both.body == "Los geht's")
        let titleOnly = render("Meine Zeit", nil)
        #expect(titleOnly.title == "Meine Zeit" && titleOnly.body == plain.body)
        let bodyOnly = render(nil, "Los geht's")
        #expect(bodyOnly.title == plain.title && bodyOnly.body == "Los geht's")
        // Blank counts as unset.
        #expect(render("", " \n") == plain)
        // Overrides change texts only.
        #expect(both.actions == plain.actions && both.deepLink == plain.deepLink && both.category == plain.category)
    }
}

@Suite("NoAlc target day")
struct NoAlcTargetDayTests {
    @Test("rule time → target day → body and deep link", arguments: [
        ("09:00", "How was yesterday?", "Wie war gestern?"),
        ("17:59", "How was yesterday?", "Wie war gestern?"),
        ("18:00", "How was today?", "Wie war heute?"),
        ("20:00", "How was today?", "Wie war heute?"),
    ])
    func targetDayCases(time: String, english: String, german: String) {
        let target = targetDay(ruleTime: LocalTime(time)!, day: occurrenceDay)
        for (locale, body) in [(NotificationLocale.en, english), (.de, german)] {
            let content = rendered(activity: .noalc, locale: locale, customTitle: nil, customBody: nil,
                                                      occurrenceDay: occurrenceDay, targetDay: target)
            #expect(content.body == body)
            #expect(content.targetDay == target)
            #expect(content.deepLink == "lht://noalc?day=\(target)")
        }
    }

    @Test("09:00 on the first of a month asks about the last day of the previous month")
    func acrossMonthBoundary() {
        let day = LocalDay("2026-03-01")!
        let content = rendered(activity: .noalc, locale: .en, customTitle: nil, customBody: nil,
                                                  occurrenceDay: day, targetDay: targetDay(ruleTime: LocalTime("09:00")!, day: day))
        #expect(content.deepLink == "lht://noalc?day=2026-02-28")
        #expect(content.body == "How was yesterday?")
    }

    @Test("NoAlc without a target day falls back to yesterday; other activities carry none")
    func missingTargetDay() {
        let noalc = rendered(activity: .noalc, locale: .en, customTitle: nil, customBody: nil,
                                                occurrenceDay: occurrenceDay, targetDay: nil)
        #expect(noalc.targetDay == dayBefore && noalc.body == "How was yesterday?")
        #expect(noalc.deepLink == "lht://noalc?day=2026-11-22")
        let workout = rendered(activity: .workout, locale: .en, customTitle: nil, customBody: nil,
                                                  occurrenceDay: occurrenceDay, targetDay: occurrenceDay)
        #expect(workout.targetDay == nil)
    }
}

@Suite("Actions and deep links")
struct NotificationActionTests {
    func render(_ activity: Activity, _ locale: NotificationLocale) -> Notification {
        rendered(activity: activity, locale: locale, customTitle: nil, customBody: nil,
                                    occurrenceDay: occurrenceDay, targetDay: activity == .noalc ? occurrenceDay : nil)
    }

    @Test("NoAlc: three level actions, the same in both locales, none opens the app", arguments: NotificationLocale.allCases)
    func noAlcActions(locale: NotificationLocale) {
        let content = render(.noalc, locale)
        #expect(content.actions == [
            NotificationAction(id: "noalc.steady", title: "💧 Steady", opensApp: false),
            NotificationAction(id: "noalc.easy", title: "✨ Easy", opensApp: false),
            NotificationAction(id: "noalc.wild", title: "💥 Wild", opensApp: false),
        ])
        #expect(content.category == "noalc")
        #expect(content.deepLink == "lht://noalc?day=2026-11-23")
    }

    @Test func mindfulnessActions() {
        #expect(render(.mindfulness, .de).actions == [NotificationAction(id: "open.meditation", title: "Meditation starten", opensApp: true)])
        #expect(render(.mindfulness, .en).actions == [NotificationAction(id: "open.meditation", title: "Start Meditation", opensApp: true)])
        #expect(render(.mindfulness, .de).deepLink == "lht://open/meditation")
        #expect(render(.mindfulness, .en).category == "mindfulness")
    }

    @Test func workoutActions() {
        #expect(render(.workout, .de).actions == [NotificationAction(id: "open.workout", title: "Workout starten", opensApp: true)])
        #expect(render(.workout, .en).actions == [NotificationAction(id: "open.workout", title: "Start Workout", opensApp: true)])
        #expect(render(.workout, .en).deepLink == "lht://open/workout")
        #expect(render(.workout, .de).category == "workout")
    }

    @Test("offered actions resolve")
    func resolveOffered() {
        let noalc = render(.noalc, .de)
        #expect(NotificationRenderer.resolve(actionId: "noalc.steady", in: noalc) == .logNoAlc(.steady))
        #expect(NotificationRenderer.resolve(actionId: "noalc.easy", in: noalc) == .logNoAlc(.easy))
        #expect(NotificationRenderer.resolve(actionId: "noalc.wild", in: noalc) == .logNoAlc(.wild))
        #expect(NotificationRenderer.resolve(actionId: "open.meditation", in: render(.mindfulness, .en))
            == .open(deepLink: "lht://open/meditation"))
        #expect(NotificationRenderer.resolve(actionId: "open.workout", in: render(.workout, .de))
            == .open(deepLink: "lht://open/workout"))
    }

    @Test("actions a notification does not offer resolve to nil", arguments: [
        (Activity.workout, "noalc.steady"), (.mindfulness, "open.workout"), (.workout, "open.meditation"),
        (.noalc, "open.meditation"), (.noalc, "noalc.drunk"), (.noalc, "NOALC.STEADY"), (.noalc, ""),
        (.mindfulness, "com.apple.UNNotificationDefaultActionIdentifier"),
    ])
    func resolveUnoffered(activity: Activity, actionId: String) {
        #expect(NotificationRenderer.resolve(actionId: actionId, in: render(activity, .en)) == nil)
    }

    @Test("an offered action that neither logs nor opens resolves to nil")
    func resolveInertAction() {
        let noalc = render(.noalc, .en)
        let inert = Notification(
            notificationId: noalc.notificationId, seq: noalc.seq, userId: noalc.userId, activity: noalc.activity,
            title: noalc.title, body: noalc.body, category: noalc.category,
            actions: [NotificationAction(id: "noalc.later", title: "Later", opensApp: false)], deepLink: "lht://noalc",
            targetDay: noalc.targetDay, reminderId: noalc.reminderId, scheduledFor: noalc.scheduledFor, sentAt: noalc.sentAt,
            locale: noalc.locale, test: noalc.test)
        #expect(NotificationRenderer.resolve(actionId: "noalc.later", in: inert) == nil)
    }
}

@Suite("Rate limit")
struct RateLimitTests {
    let six = Instant(rfc3339: "2026-11-23T18:00:00Z")!

    func at(_ minutes: Int64) -> Instant { six.adding(seconds: minutes * 60) }

    @Test func nothingSentYetIsAllowed() {
        #expect(RateLimit.allows(occurrenceAt: six, lastSentAt: nil, minutes: 60))
    }

    @Test func boundaries() {
        #expect(!RateLimit.allows(occurrenceAt: at(59), lastSentAt: six, minutes: 60))
        #expect(!RateLimit.allows(occurrenceAt: at(60).adding(milliseconds: -1), lastSentAt: six, minutes: 60))
        #expect(RateLimit.allows(occurrenceAt: at(60), lastSentAt: six, minutes: 60))
        #expect(RateLimit.allows(occurrenceAt: at(61), lastSentAt: six, minutes: 60))
        #expect(!RateLimit.allows(occurrenceAt: six, lastSentAt: six, minutes: 60))
        // Before the last sent one: dropped, as seed `001_…`'s `< 3600` check does (SEMANTICS §4).
        #expect(!RateLimit.allows(occurrenceAt: at(-90), lastSentAt: six, minutes: 60))
        // Another setting of --rate-limit-minutes.
        #expect(!RateLimit.allows(occurrenceAt: at(14), lastSentAt: six, minutes: 15))
        #expect(RateLimit.allows(occurrenceAt: at(15), lastSentAt: six, minutes: 15))
        #expect(!RateLimit.allows(occurrenceAt: at(1_000_000), lastSentAt: six, minutes: Int.max))
    }

    @Test("0 minutes turns the limit off")
    func off() {
        #expect(RateLimit.allows(occurrenceAt: six, lastSentAt: six, minutes: 0))
        #expect(RateLimit.allows(occurrenceAt: at(1), lastSentAt: six, minutes: 0))
    }

    @Test("a dropped notification does not restart the hour")
    func foldOverOccurrences() {
        let occurrences: [Int64] = [0, 30, 60, 80, 120] // 18:00, 18:30, 19:00, 19:20, 20:00
        var lastSent: Instant?
        var sent: [Bool] = []
        for minutes in occurrences {
            let occurrence = at(minutes)
            let allowed = RateLimit.allows(occurrenceAt: occurrence, lastSentAt: lastSent, minutes: 60)
            if allowed { lastSent = occurrence } // only a sent notification moves the window
            sent.append(allowed)
        }
        #expect(sent == [true, false, true, false, true])
        #expect(lastSent == at(120))
    }
}
