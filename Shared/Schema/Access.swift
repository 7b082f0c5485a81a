import Foundation

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
