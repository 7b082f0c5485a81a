import Foundation

// The one catalog of the wire contract (PROTOCOL.md): every service, every op with its request and
// reply types, every event type with its data type, publisher and topic. Services register handlers
// by these entries, clients call by them, and the authorization rules (PROTOCOL "Security") are read
// from them: nothing else in the system spells an op or event name.

/// The four services, by executable name.
public enum ServiceName: String, CaseIterable, Codable, Sendable {
    case sessionLogger = "session-logger"
    case reminderPlanner = "reminder-planner"
    case notifier
    case noalcStreak = "noalc-streak"
}

/// Who may make a request (PROTOCOL "Security", the table of what a user may do). Services and
/// admins may make every request; these rules say what a user may.
public enum Access: Sendable, Hashable {
    /// Anyone let in (`health`).
    case anyone
    /// The request names a user (`UserScoped`): only that user; another user's is `unauthorized`.
    case ownUser
    /// The request names a record by id: only its owner; another user's is `not_found`, as for an unknown id.
    case ownRecord
    /// `events.since`: every caller, but a user sees only events whose topic names them.
    case ownEvents
    /// Ops that name neither a user nor a record (`clock.*`): services and admins only.
    case privileged
}

/// A request whose `data.userId` names the user it acts for.
public protocol UserScoped {
    var userId: UserID { get }
}

/// A request that names one record by id; `notFound` is the reply for an unknown id, which is
/// also the reply for another user's (PROTOCOL "Security": no existence oracle).
public protocol RecordScoped {
    var notFound: WireError { get }
}

/// What every op entry tells without its types, for tables such as the authorization rules.
public struct OpInfo: Sendable, Hashable {
    public let name: String
    /// Nil for the ops every service answers (`health`, `events.since`).
    public let service: ServiceName?
    public let access: Access
}

/// One op: its name, the service that serves it, its request and reply types, and who may call it.
public struct Op<Request: Codable & Sendable, Reply: Codable & Sendable>: Sendable {
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

/// One event type: its name (the topic's first part), its data type and the service that publishes it.
public struct EventType<Payload: Codable & EventPayload>: Sendable {
    public let info: EventTypeInfo
    public var name: String { info.name }

    init(_ name: String, _ publisher: ServiceName) { info = EventTypeInfo(name: name, publisher: publisher) }

    /// The topic of one event of this type: `<type>.<userId>.<activity>`.
    public func topic(userId: UserID, activity: Activity) -> Topic { Topic(type: name, userId: userId, activity: activity) }

    /// The prefix that subscribes to one user's events of this type: `notify.henning.`.
    public func prefix(userId: UserID) -> String { info.prefix(userId: userId) }
}

// The catalog's payloads, each the `data` of its events' envelopes.
extension StoredSession: EventPayload {}
extension StoredNoAlcEntry: EventPayload {}
extension ReminderChange: EventPayload {}
extension Occurrence: EventPayload {}
extension DueOccurrence: EventPayload {}
extension Notification: EventPayload {}
extension StreakState: EventPayload {}

public struct EventTypeInfo: Sendable, Hashable {
    public let name: String
    public let publisher: ServiceName

    public func prefix(userId: UserID) -> String { "\(name).\(userId)." }
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

/// Every event type of PROTOCOL.md.
public enum Events {
    public static let sessionLogged = EventType<StoredSession>("session.logged", .sessionLogger)
    public static let noalcLogged = EventType<StoredNoAlcEntry>("noalc.logged", .sessionLogger)
    public static let reminderChanged = EventType<ReminderChange>("reminder.changed", .reminderPlanner)
    public static let reminderCancelled = EventType<Occurrence>("reminder.cancelled", .reminderPlanner)
    public static let reminderRestored = EventType<Occurrence>("reminder.restored", .reminderPlanner)
    public static let reminderDue = EventType<DueOccurrence>("reminder.due", .reminderPlanner)
    public static let reminderSuppressed = EventType<Occurrence>("reminder.suppressed", .reminderPlanner)
    public static let reminderMissed = EventType<Occurrence>("reminder.missed", .reminderPlanner)
    public static let reminderSkipped = EventType<Occurrence>("reminder.skipped", .reminderPlanner)
    public static let notify = EventType<Notification>("notify", .notifier)
    public static let streakUpdated = EventType<StreakState>("streak.updated", .noalcStreak)

    public static let all: [EventTypeInfo] = [
        sessionLogged.info, noalcLogged.info, reminderChanged.info, reminderCancelled.info, reminderRestored.info,
        reminderDue.info, reminderSuppressed.info, reminderMissed.info, reminderSkipped.info, notify.info, streakUpdated.info,
    ]

    public static func published(by service: ServiceName) -> [EventTypeInfo] { all.filter { $0.publisher == service } }

    /// The decision event of an occurrence that did not fire (`reminder.suppressed` …); nil for `fired`,
    /// whose event (`reminder.due`) carries more than the occurrence.
    public static func decision(_ status: OccurrenceStatus) -> EventType<Occurrence>? {
        switch status {
        case .suppressed: reminderSuppressed
        case .missed: reminderMissed
        case .skipped: reminderSkipped
        case .cancelled: reminderCancelled
        case .scheduled, .fired: nil
        }
    }
}

/// An event's data decoded into its catalog type, in one pass.
public enum EventData: Sendable, Hashable {
    case sessionLogged(StoredSession)
    case noalcLogged(StoredNoAlcEntry)
    case reminderChanged(ReminderChange)
    /// `reminder.cancelled`, `.restored`, `.suppressed`, `.missed`, `.skipped`: the type says which.
    case occurrence(Occurrence)
    case reminderDue(DueOccurrence)
    case notify(Notification)
    case streakUpdated(StreakState)
}

/// A payload of one of the catalog's types, which knows its `EventData` case: a transaction keeps an
/// event's data for a projection behind the log (`Transaction.append`) without casting it to each
/// type in turn (the planner's `reminder.due` had gone through five failed dynamic casts).
public protocol CatalogPayload: Sendable {
    var eventData: EventData { get }
}

extension StoredSession: CatalogPayload { public var eventData: EventData { .sessionLogged(self) } }
extension StoredNoAlcEntry: CatalogPayload { public var eventData: EventData { .noalcLogged(self) } }
extension ReminderChange: CatalogPayload { public var eventData: EventData { .reminderChanged(self) } }
extension Occurrence: CatalogPayload { public var eventData: EventData { .occurrence(self) } }
extension DueOccurrence: CatalogPayload { public var eventData: EventData { .reminderDue(self) } }
extension Notification: CatalogPayload { public var eventData: EventData { .notify(self) } }
extension StreakState: CatalogPayload { public var eventData: EventData { .streakUpdated(self) } }

/// An envelope as a reader of every event type receives it, its data already typed. An event
/// type this reader does not know (a newer publisher) decodes with `data == nil`.
public typealias ReceivedEvent = EventEnvelope<EventData?>

extension Optional: EventPayload where Wrapped == EventData {
    public static func decode(from envelope: KeyedDecodingContainer<EnvelopeKey>, eventType: String) throws -> EventData? {
        func payload<Payload: Decodable>(_ kind: Payload.Type) throws -> Payload { try envelope.decode(kind, forKey: .data) }
        switch eventType {
        case Events.sessionLogged.name: return .sessionLogged(try payload(StoredSession.self))
        case Events.noalcLogged.name: return .noalcLogged(try payload(StoredNoAlcEntry.self))
        case Events.reminderChanged.name: return .reminderChanged(try payload(ReminderChange.self))
        case Events.reminderDue.name: return .reminderDue(try payload(DueOccurrence.self))
        case Events.notify.name: return .notify(try payload(Notification.self))
        case Events.streakUpdated.name: return .streakUpdated(try payload(StreakState.self))
        case Events.reminderCancelled.name, Events.reminderRestored.name, Events.reminderSuppressed.name,
             Events.reminderMissed.name, Events.reminderSkipped.name:
            return .occurrence(try payload(Occurrence.self))
        default: return nil
        }
    }

    public func encode(to envelope: inout KeyedEncodingContainer<EnvelopeKey>) throws {
        switch self {
        case .sessionLogged(let value): try envelope.encode(value, forKey: .data)
        case .noalcLogged(let value): try envelope.encode(value, forKey: .data)
        case .reminderChanged(let value): try envelope.encode(value, forKey: .data)
        case .occurrence(let value): try envelope.encode(value, forKey: .data)
        case .reminderDue(let value): try envelope.encode(value, forKey: .data)
        case .notify(let value): try envelope.encode(value, forKey: .data)
        case .streakUpdated(let value): try envelope.encode(value, forKey: .data)
        case nil: try envelope.encodeNil(forKey: .data)
        }
    }
}

/// The heartbeat a publisher sends when it has published nothing for a second (PROTOCOL "Events"):
/// not stored, no seq, so followers notice a gap or a silent publisher without polling.
public struct Heartbeat: Codable, Sendable, Hashable {
    public static let topic = "heartbeat"
    public static let intervalMilliseconds: Int64 = 1000

    public let v: Int
    public let type: String
    public let source: String
    public let lastSeq: Int64
    public let time: Instant
    /// The identity of the publisher's event log (see `EventsSinceReply.logId`).
    public let logId: RecordID?

    public init(source: String, lastSeq: Int64, time: Instant, logId: RecordID) {
        v = wireVersion
        type = Self.topic
        self.source = source
        self.lastSeq = lastSeq
        self.time = time
        self.logId = logId
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

extension SessionLogRequest: UserScoped {}
extension NoAlcLogRequest: UserScoped {}
extension SessionListRequest: UserScoped {}
extension DayRangeRequest: UserScoped {}
extension DailySummaryRequest: UserScoped {}
extension UserPutRequest: UserScoped {}
extension UserRequest: UserScoped {}
extension ReminderPutRequest: UserScoped {}
extension UpcomingRequest: UserScoped {}
extension NotificationListRequest: UserScoped {}
extension StreakGetRequest: UserScoped {}
extension CalendarGetRequest: UserScoped {}

extension ReminderIDRequest: RecordScoped {
    public var notFound: WireError { WireError(.notFound, "no reminder \(id)", field: "data.id") }
}

extension RestoreRequest: RecordScoped {
    public var notFound: WireError { WireError(.notFound, "no reminder \(reminderId)", field: "data.reminderId") }
}

extension ReminderTestRequest: RecordScoped {
    public var notFound: WireError { WireError(.notFound, "no reminder \(reminderId)", field: "data.reminderId") }
}

extension NotificationActionRequest: RecordScoped {
    public var notFound: WireError {
        WireError(.notFound, "no notification \"\(notificationId.prefix(80))\"", field: "data.notificationId")
    }
}
