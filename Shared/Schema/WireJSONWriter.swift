import Foundation

/// Values on the hottest paths (the planner's decisions) write their JSON fields directly;
/// `WireJSON.encode` uses this instead of their `encode(to:)`, which must produce the same object
/// (a schema test checks they decode to the same value).
public protocol WireJSONWritable: Encodable {
    func writeFields(to object: inout JSONObjectWriter)
}

/// Writes one JSON object's members, in order, with strings escaped as the encoder does.
public struct JSONObjectWriter {
    private(set) var bytes: [UInt8]
    private var empty = true

    /// `capacity`: the bytes it will likely take, so that they are allocated once.
    public init(capacity: Int = 512) {
        bytes = [UInt8(ascii: "{")]
        bytes.reserveCapacity(capacity)
    }

    private mutating func key(_ key: StaticString) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// A string written by `write` into a buffer of `capacity` bytes, quoted; for values whose
    /// text needs no escape, written without making a `String` first.
    private mutating func quoted(capacity: Int, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Int) {
        bytes.append(UInt8(ascii: "\""))
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<write(buffer)]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// As `field(name, id.description)`.
    public mutating func field(_ name: StaticString, _ id: RecordID) {
        key(name)
        quoted(capacity: RecordID.textLength) { id.write(into: $0) }
    }

    /// As `field(name, instant.description)`.
    public mutating func field(_ name: StaticString, _ instant: Instant) {
        key(name)
        quoted(capacity: Instant.longestText) { instant.write(into: $0) }
    }

    public mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        JSONText.appendString(value, to: &bytes)
    }

    /// nil is written as null.
    public mutating func field(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { JSONText.appendString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    /// nil leaves the member out, as `encodeIfPresent` does.
    public mutating func fieldIfPresent(_ name: StaticString, _ value: String?) {
        if let value { field(name, value) }
    }

    public mutating func field(_ name: StaticString, _ value: Int64) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    public mutating func field(_ name: StaticString, strings: [String]) {
        key(name)
        bytes.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            JSONText.appendString(string, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A member whose value is JSON already.
    public mutating func field(_ name: StaticString, json: Data) {
        key(name)
        bytes.append(contentsOf: json)
    }

    public consuming func finished() -> Data {
        bytes.append(UInt8(ascii: "}"))
        return Data(bytes)
    }
}

enum JSONText {
    private static let hex = Array("0123456789abcdef".utf8)

    /// Runs of bytes that need no escape are copied whole: most strings are one such run.
    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var copied = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[copied..<index]))
                appendEscaped(byte, to: &bytes)
                copied = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[copied...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ byte: UInt8, to bytes: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        default: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }
}

extension EventEnvelope {
    /// The envelope frame around `data` that is JSON already: what the outbox stores and publishes.
    public static func frame(type: String, seq: Int64, id: RecordID = RecordID(), time: Instant, source: String,
                             topic: String, encodedData: Data) -> Data {
        var object = JSONObjectWriter(capacity: 256 + topic.utf8.count + encodedData.count)
        object.field("v", Int64(wireVersion))
        object.field("type", type)
        object.field("seq", seq)
        object.field("id", id)
        object.field("time", time)
        object.field("source", source)
        object.field("topic", topic)
        object.field("data", json: encodedData)
        return object.finished()
    }
}

extension Occurrence: WireJSONWritable {
    public func writeFields(to object: inout JSONObjectWriter) {
        object.field("reminderId", reminderId)
        object.field("userId", userId.rawValue)
        object.field("activity", activity.rawValue)
        object.field("at", at)
        object.field("localTime", localTime.description)
        object.field("day", day.description)
        object.field("weekday", weekday.rawValue)
        object.fieldIfPresent("windowStart", windowStart?.description)
        object.field("status", status.rawValue)
        object.fieldIfPresent("cause", cause?.description)
        object.fieldIfPresent("targetDay", targetDay?.description)
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
        object.field("day", day.description)
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
        object.field("asOf", asOf.description)
        object.field("policy", policy)
        object.field("streakDays", Int64(streakDays))
        object.field("rewardsEarned", Int64(rewardsEarned))
        object.field("rewardsUsed", Int64(rewardsUsed))
        object.field("rewardsLost", Int64(rewardsLost))
        object.field("rewardsAvailable", Int64(rewardsAvailable))
        object.field("lastLoggedDay", lastLoggedDay?.description)
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
