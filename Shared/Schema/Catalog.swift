import Foundation

// The one catalog of the wire contract (PROTOCOL.md): every service, every op with its request and
// reply types, every event type with its data type, publisher and topic. Services register handlers
// by these entries, clients call by them, and the authorization rules (PROTOCOL "Security") are read
// from them: nothing else in the system spells an op or event name. The ops are here, the event
// types in `EventCatalog.swift`, who may call what in `Access.swift`.

/// The four services, by executable name.
public enum ServiceName: String, CaseIterable, Codable, Sendable {
    case sessionLogger = "session-logger"
    case reminderPlanner = "reminder-planner"
    case notifier
    case noalcStreak = "noalc-streak"
}

/// What every op entry tells without its types, for tables such as the authorization rules.
public struct OpInfo: Sendable, Hashable {
    public let name: String
    /// Nil for the ops every service answers (`health`, `events.since`).
    public let service: ServiceName?
    public let access: Access
}

/// One op: its name, the service that serves it, its request and reply types, and who may call it.
public struct Op<Request: RequestPayload, Reply: Codable & Sendable>: Sendable {
    public let info: OpInfo
    public var name: String { info.name }

    init(_ name: String, _ service: ServiceName?, access: Access) {
        info = OpInfo(name: name, service: service, access: access)
    }

    init(_ name: String, _ service: ServiceName) where Request: UserScoped {
        self.init(name, service, access: .ownUser)
    }

    init(_ name: String, _ service: ServiceName) where Request: RecordScoped {
        self.init(name, service, access: .ownRecord)
    }
}

/// Every op of PROTOCOL.md.
public enum Ops {
    // Every service.
    public static let health = Op<NoFields, HealthReply>("health", nil, access: .anyone)
    public static let eventsSince = Op<EventsSinceRequest, EventsSinceReply>("events.since", nil, access: .ownEvents)

    // session-logger
    public static let sessionLog = Op<SessionLogRequest, LogReceipt>("session.log", .sessionLogger)
    public static let noalcLog = Op<NoAlcLogRequest, LogReceipt>("noalc.log", .sessionLogger)
    public static let sessionList = Op<SessionListRequest, SessionListReply>("session.list", .sessionLogger)
    public static let noalcList = Op<DayRangeRequest, NoAlcListReply>("noalc.list", .sessionLogger)
    public static let dailySummary = Op<DailySummaryRequest, DailySummaryReply>("daily.summary", .sessionLogger)

    // reminder-planner
    public static let userPut = Op<UserPutRequest, UserSettings>("user.put", .reminderPlanner)
    public static let userGet = Op<UserRequest, UserSettings>("user.get", .reminderPlanner)
    public static let reminderPut = Op<ReminderPutRequest, ReminderPutReply>("reminder.put", .reminderPlanner)
    public static let reminderGet = Op<ReminderIDRequest, Reminder>("reminder.get", .reminderPlanner)
    public static let reminderList = Op<UserRequest, ReminderListReply>("reminder.list", .reminderPlanner)
    public static let reminderDelete = Op<ReminderIDRequest, ReminderDeleted>("reminder.delete", .reminderPlanner)
    public static let reminderUpcoming = Op<UpcomingRequest, UpcomingReply>("reminder.upcoming", .reminderPlanner)
    public static let reminderRestore = Op<RestoreRequest, Occurrence>("reminder.restore", .reminderPlanner)
    public static let reminderTest = Op<ReminderTestRequest, Occurrence>("reminder.test", .reminderPlanner)
    public static let clockGet = Op<NoFields, ClockReply>("clock.get", .reminderPlanner, access: .privileged)
    public static let clockSet = Op<ClockSetRequest, ClockReply>("clock.set", .reminderPlanner, access: .privileged)
    public static let clockAdvance = Op<ClockAdvanceRequest, ClockReply>("clock.advance", .reminderPlanner, access: .privileged)

    // notifier
    public static let notificationList = Op<NotificationListRequest, NotificationListReply>("notification.list", .notifier)
    public static let notificationAction = Op<NotificationActionRequest, NotificationActionReply>("notification.action", .notifier)

    // noalc-streak
    public static let streakGet = Op<StreakGetRequest, StreakState>("streak.get", .noalcStreak)
    public static let calendarGet = Op<CalendarGetRequest, CalendarReply>("calendar.get", .noalcStreak)

    /// Every op, for tables and checks that need them all.
    public static let all: [OpInfo] = [
        health.info, eventsSince.info,
        sessionLog.info, noalcLog.info, sessionList.info, noalcList.info, dailySummary.info,
        userPut.info, userGet.info, reminderPut.info, reminderGet.info, reminderList.info, reminderDelete.info,
        reminderUpcoming.info, reminderRestore.info, reminderTest.info, clockGet.info, clockSet.info, clockAdvance.info,
        notificationList.info, notificationAction.info,
        streakGet.info, calendarGet.info,
    ]

    /// The ops `service` answers, those every service answers included.
    public static func served(by service: ServiceName) -> [OpInfo] {
        all.filter { $0.service == nil || $0.service == service }
    }

    public static func named(_ name: String) -> OpInfo? { all.first { $0.name == name } }
}

// Every op's request type, as a service reads it (`RequestPayload`).
extension NoFields: RequestPayload {}
extension EventsSinceRequest: RequestPayload {}
extension SessionLogRequest: RequestPayload {}
extension NoAlcLogRequest: RequestPayload {}
extension SessionListRequest: RequestPayload {}
extension DayRangeRequest: RequestPayload {}
extension DailySummaryRequest: RequestPayload {}
extension UserPutRequest: RequestPayload {}
extension UserRequest: RequestPayload {}
extension ReminderPutRequest: RequestPayload {}
extension ReminderIDRequest: RequestPayload {}
extension UpcomingRequest: RequestPayload {}
extension RestoreRequest: RequestPayload {}
extension ReminderTestRequest: RequestPayload {}
extension ClockSetRequest: RequestPayload {}
extension ClockAdvanceRequest: RequestPayload {}
extension NotificationListRequest: RequestPayload {}
extension NotificationActionRequest: RequestPayload {}
extension StreakGetRequest: RequestPayload {}
extension CalendarGetRequest: RequestPayload {}
