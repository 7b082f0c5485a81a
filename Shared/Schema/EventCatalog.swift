import Foundation

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
