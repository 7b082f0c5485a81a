import Foundation
import LHTSchema

/// Whether a request left unanswered by one instance may be sent to another (PROTOCOL "Cluster":
/// a request goes to one live instance and is sent again to another when unanswered). An
/// unanswered request may still have been carried out, late: sending it again is safe only when
/// doing it twice leaves the same state as doing it once.
public enum Resend: Sendable, Equatable {
    /// A read, or a write whose repeat changes nothing: it names its record by an id the client made,
    /// or it replaces a whole record.
    case anyInstance
    /// Twice would do it twice: it goes to another instance only when it provably never left this
    /// client (no connection to the first instance was ever made), else it fails as "may have been done".
    case onlyIfNeverSent

    /// The rule for `op`; `carriesID`: the request's `data.id` is set.
    public static func of(op: String, carriesID: Bool) -> Resend {
        switch op {
        // Reads.
        case "health", "events.since", "session.list", "noalc.list", "daily.summary", "user.get", "reminder.get",
             "reminder.list", "reminder.upcoming", "clock.get", "notification.list", "streak.get", "calendar.get":
            .anyInstance
        // `user.put` and `reminder.put` with an id store the whole record as given (a replace);
        // `reminder.delete` again finds nothing to delete (`not_found`) and changes nothing;
        // `reminder.restore` again finds the occurrence restored already; `notification.action`
        // logs under an id derived from (notificationId, actionId); the logs dedupe by their id.
        case "user.put", "reminder.delete", "reminder.restore", "notification.action":
            .anyInstance
        case "session.log", "noalc.log", "reminder.put":
            carriesID ? .anyInstance : .onlyIfNeverSent
        // `reminder.test` publishes one more `reminder.due` each time, `clock.advance` moves on by its
        // seconds each time, and `clock.set` moves one instance's own clock, not another's; an op this
        // table does not know is treated as unsafe.
        default:
            .onlyIfNeverSent
        }
    }

    /// The rule for a request frame as sent (`{"op":…, "data":{"id":…}}`); an unreadable one is unsafe.
    public static func of(requestFrame: Data) -> Resend {
        guard let head = FrameHead(requestFrame), let op = head.op else { return .onlyIfNeverSent }
        return of(op: op, carriesID: head.dataString("id") != nil)
    }
}

/// A create whose record the client names (`session.log`, `noalc.log`, `reminder.put`): without an
/// id the service would make one, so a request sent twice would make two records. `ServiceClient`
/// gives such a request an id of its own (a time-ordered UUID v7) before it is sent the first time.
public protocol ClientIdentifiable {
    var id: RecordID? { get }
    /// The same request naming its record `id`.
    func identified(by id: RecordID) -> Self
}

extension ClientIdentifiable {
    /// Self with a new client-made id if it has none.
    public func identified() -> Self { id == nil ? identified(by: RecordID()) : self }
}

extension SessionLogRequest: ClientIdentifiable {
    public func identified(by id: RecordID) -> SessionLogRequest {
        SessionLogRequest(id: id, userId: userId, activity: activity, start: start, end: end, source: source)
    }
}

extension NoAlcLogRequest: ClientIdentifiable {
    public func identified(by id: RecordID) -> NoAlcLogRequest {
        NoAlcLogRequest(id: id, userId: userId, day: day, level: level, source: source)
    }
}

extension ReminderPutRequest: ClientIdentifiable {
    public func identified(by id: RecordID) -> ReminderPutRequest {
        ReminderPutRequest(id: id, userId: userId, activity: activity, time: time, weekdays: weekdays,
                           lookbackHours: lookbackHours, enabled: enabled, title: title, body: body)
    }
}
