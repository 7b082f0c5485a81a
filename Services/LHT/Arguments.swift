import ArgumentParser
import Foundation
import LHTSchema

// Request values from command-line arguments, read as the wire reads them.

/// A command-line text as the wire type the request carries, read by the schema's own decoder: a bad
/// value fails as the service would answer it (`error: invalid_argument (data.timeZone): …`, status 1).
func wireValue<Value: Decodable>(_ text: String, field: String) throws(Failure) -> Value {
    try wireValue(JSONValue.string(text), field: field)
}

/// As above for an option left out: nil, which the request leaves out.
func wireValue<Value: Decodable>(_ text: String?, field: String) throws(Failure) -> Value? {
    guard let text else { return nil }
    return try wireValue(JSONValue.string(text), field: field) as Value
}

/// As above, for a list (`--days`): a bad item is named by its index (`data.weekdays[2]`).
func wireValue<Value: Decodable>(_ items: [String], field: String) throws(Failure) -> Value {
    try wireValue(JSONValue.array(items.map(JSONValue.string)), field: field)
}

private func wireValue<Value: Decodable>(_ json: JSONValue, field: String) throws(Failure) -> Value {
    do {
        return try JSONDecoder().decode(Value.self, from: WireJSON.encode(json))
    } catch {
        let wire = WireError(decoding: error, under: "data.\(field)")
        throw Failure.service(code: wire.code.rawValue, field: wire.field, message: wire.message)
    }
}

extension UserOption {
    /// `--user` (or LHT_USER) as the requests' `userId`.
    func userID() throws(Failure) -> UserID { try wireValue(id, field: "userId") }
}

extension JSONValue {
    /// One line of JSON (keys sorted).
    var jsonLine: String { (try? WireJSON.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null" }
}

/// Parses an RFC 3339 instant option.
func parseInstant(_ text: String, option: String) throws -> Instant {
    guard let instant = Instant(rfc3339: text) else {
        throw ValidationError("\(option): \"\(text)\" is not an RFC 3339 instant such as 2026-11-23T18:00:00+01:00")
    }
    return instant
}

/// The user's time zone as the planner has it (defaults for a user never set).
func userZone(_ client: Client, user: UserID) throws(Failure) -> (zone: ZoneID, settings: UserSettings) {
    let settings = try client.call(Ops.userGet, UserRequest(userId: user)).value
    return (settings.timeZone, settings)
}
