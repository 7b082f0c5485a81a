/// A value that is a single JSON string on the wire, checked on the way in: days, times, zones,
/// instants, user ids and record ids all decode and encode the same way.
protocol WireString: Codable {
    init?(wireText: String)
    var wireText: String { get }
    /// What a valid value looks like, for the error a bad one gets.
    static var expected: String { get }
}

extension WireString {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(wireText: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected \(Self.expected), got \"\(text.prefix(40))\"")
        }
        self = value
    }

    /// A single string; these types have no synthesized conformance that could write one.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wireText)
    }
}

extension LocalDay: WireString {
    init?(wireText: String) { self.init(wireText) }
    var wireText: String { description }
    static var expected: String { "a day as YYYY-MM-DD" }
}

extension LocalTime: WireString {
    init?(wireText: String) { self.init(wireText) }
    var wireText: String { description }
    static var expected: String { "a time as HH:mm (24 h)" }
}

extension ZoneID: WireString {
    init?(wireText: String) { self.init(wireText) }
    var wireText: String { identifier }
    static var expected: String { "an IANA time zone such as Europe/Berlin" }
}

extension Instant: WireString {
    init?(wireText: String) { self.init(rfc3339: wireText) }
    var wireText: String { description }
    static var expected: String { "an RFC 3339 instant with Z or an offset" }
}

extension UserID: WireString {
    init?(wireText: String) { self.init(wireText) }
    var wireText: String { rawValue }
    static var expected: String { "a userId of 1-64 characters A-Z a-z 0-9 _ -" }
}

extension RecordID: WireString {
    init?(wireText: String) { self.init(wireText) }
    var wireText: String { description }
    static var expected: String { "a UUID such as 3f2b8c1e-0000-4000-8000-000000000000" }
}
