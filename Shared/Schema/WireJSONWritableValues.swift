import Foundation

// The hottest values write their fields by hand (`WireJSONWritable`); each writes the object its
// `encode(to:)` writes, which the schema tests check.

extension EventEnvelope {
    /// The envelope frame around `data` that is JSON already: what the outbox stores and publishes.
    public static func frame(type: String, seq: Int64, id: RecordID = RecordID(), time: Instant, source: String,
                             topic: String, encodedData: Data) -> Data {
        frame(type: type, seq: seq, id: id, time: time, source: source, topic: topic, dataBytes: encodedData.count) {
            $0.field("data", json: encodedData)
        }
    }

    /// As `frame(encodedData:)`, with `data` written in place: no JSON of its own is made and copied
    /// in (an allocation, a `Data` and a copy for every event stored).
    public static func frame(type: String, seq: Int64, id: RecordID = RecordID(), time: Instant, source: String,
                             topic: String, data: some WireJSONWritable) -> Data {
        frame(type: type, seq: seq, id: id, time: time, source: source, topic: topic, dataBytes: 256) { $0.field("data", object: data) }
    }

    private static func frame(type: String, seq: Int64, id: RecordID, time: Instant, source: String, topic: String,
                              dataBytes: Int, writeData: (inout JSONObjectWriter) -> Void) -> Data {
        var object = JSONObjectWriter(capacity: 256 + topic.utf8.count + dataBytes)
        object.field("v", Int64(wireVersion))
        object.field("type", type)
        object.field("seq", seq)
        object.field("id", id)
        object.field("time", time)
        object.field("source", source)
        object.field("topic", topic)
        writeData(&object)
        return object.finished()
    }
}

extension Occurrence: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("reminderId", reminderId)
        object.field("userId", userId.rawValue)
        object.field("activity", activity.rawValue)
        object.field("at", at)
        object.field("localTime", localTime)
        object.field("day", day)
        object.field("weekday", weekday.rawValue)
        object.fieldIfPresent("windowStart", windowStart)
        object.field("status", status.rawValue)
        object.fieldIfPresent("cause", cause)
        object.fieldIfPresent("targetDay", targetDay)
    }
}

extension DueOccurrence: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        occurrence.writeFields(to: &object)
        object.field("timeZone", timeZone.identifier)
        object.field("locale", locale.rawValue)
        object.field("title", title)
        object.field("body", body)
        object.field("late", late)
        object.field("test", test)
    }
}

extension StoredSession: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("id", id)
        object.field("userId", userId.rawValue)
        object.field("activity", activity.rawValue)
        object.field("start", start)
        object.field("end", end)
        object.field("source", source)
        object.field("loggedAt", loggedAt)
    }
}

extension StoredNoAlcEntry: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("id", id)
        object.field("userId", userId.rawValue)
        object.field("day", day)
        object.field("level", level.rawValue)
        object.field("drinks", Int64(drinks))
        object.field("source", source)
        object.field("loggedAt", loggedAt)
    }
}

extension LogReceipt: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("id", id)
        object.field("seq", seq)
        object.field("duplicate", duplicate)
    }
}

/// Written once per applied NoAlc entry (`streak.updated`) and per `streak.get`.
extension StreakState: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("userId", userId.rawValue)
        object.field("asOf", asOf)
        object.field("policy", policy)
        object.field("streakDays", Int64(streakDays))
        object.field("rewardsEarned", Int64(rewardsEarned))
        object.field("rewardsUsed", Int64(rewardsUsed))
        object.field("rewardsLost", Int64(rewardsLost))
        object.field("rewardsAvailable", Int64(rewardsAvailable))
        object.field("lastLoggedDay", lastLoggedDay)
        object.field("todayLogged", todayLogged)
    }
}

extension Reminder: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("id", id)
        object.field("userId", userId.rawValue)
        object.field("activity", activity.rawValue)
        object.field("time", time.description)
        object.field("weekdays", strings: weekdays.map(\.rawValue))
        object.field("lookbackHours", Int64(lookbackHours))
        object.field("enabled", enabled)
        object.field("title", title)
        object.field("body", body)
        object.field("createdAt", createdAt)
    }
}

extension ReminderPutReply: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        reminder.writeFields(to: &object)
        if let warnings { object.field("warnings", strings: warnings) }
    }
}

extension ReminderDeleted: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("id", id)
        object.fieldIfPresent("userId", userId?.rawValue)
        object.fieldIfPresent("activity", activity?.rawValue)
        object.field("deleted", deleted)
    }
}

/// Once per `reminder.put` and `reminder.delete` (`reminder.changed`).
extension ReminderChange: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        switch self {
        case .put(let reminder): reminder.writeFields(to: &object)
        case .deleted(let deletion): deletion.writeFields(to: &object)
        }
    }
}
