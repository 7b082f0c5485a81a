import LHTSchema

/// One day of a `calendar.get` month: its level and colour, or `null` for both when unlogged.
public struct CalendarDay: Sendable, Hashable, Codable {
    public let day: LocalDay
    public let level: NoAlcLevel?
    public let color: String?

    public init(day: LocalDay, level: NoAlcLevel?) {
        self.day = day
        self.level = level
        color = level.map(NoAlcCalendar.color(for:))
    }

    private enum CodingKeys: String, CodingKey { case day, level, color }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(day: try c.decode(LocalDay.self, forKey: .day),
                  level: try c.decodeIfPresent(NoAlcLevel.self, forKey: .level))
    }

    /// Writes `level` and `color` as explicit `null`s, as PROTOCOL.md spells the reply.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(day, forKey: .day)
        try c.encode(level, forKey: .level)
        try c.encode(color, forKey: .color)
    }
}

/// The calendar picture of NoAlc levels (SEMANTICS §6, seed `002_…`).
public enum NoAlcCalendar {
    /// Seed `002_…`'s colours (SEMANTICS §6), so the picture matches what users know.
    public static func color(for level: NoAlcLevel) -> String {
        switch level {
        case .steady: "#0EBF6E"
        case .easy: "#89D6B2"
        case .wild: "#B6B6B6"
        }
    }

    /// The first and last day of a `YYYY-MM` month, or nil when the text is not exactly that
    /// (the service turns nil into `invalid_argument` on `data.month`, and can fetch just this range).
    public static func monthRange(_ yearMonth: String) -> ClosedRange<LocalDay>? {
        let bytes = Array(yearMonth.utf8)
        guard bytes.count == 7, bytes[4] == UInt8(ascii: "-"),
              let year = digits(bytes[0..<4]), let month = digits(bytes[5..<7]),
              let first = LocalDay(year: year, month: month, day: 1) else { return nil }
        // Days 28...31: the last one that exists ends the month (no Calendar, no leap-year table).
        var lastDay = 28
        while lastDay < 31, LocalDay(year: year, month: month, day: lastDay + 1) != nil { lastDay += 1 }
        return first...first.adding(days: lastDay - 1)
    }

    /// Every day of the month in order, each with its level and colour where one is logged;
    /// nil for a malformed month. Levels outside the month are ignored.
    public static func month(_ yearMonth: String, levels: [LocalDay: NoAlcLevel]) -> [CalendarDay]? {
        guard let range = monthRange(yearMonth) else { return nil }
        var days: [CalendarDay] = []
        days.reserveCapacity(31)
        for ordinal in range.lowerBound.ordinal...range.upperBound.ordinal {
            let day = LocalDay(ordinal: ordinal)
            days.append(CalendarDay(day: day, level: levels[day]))
        }
        return days
    }

    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
