/// A POSIX `TZ` rule as a TZif footer carries it (RFC 8536 §3.3, with its extensions: hours up
/// to ±167 in transition times, a `<…>` quoted name): `CET-1CEST,M3.5.0,M10.5.0/3`.
/// It gives the offsets after the last transition of a TZif file's table, for every year.
public struct POSIXTZ: Hashable, Sendable {
    /// Seconds east of UTC (POSIX writes them west: `CET-1` is +3600).
    public let standardOffset: Int64
    public let daylight: Daylight?

    public struct Daylight: Hashable, Sendable {
        public let offset: Int64
        /// Both in local time: `start` in standard time, `end` in daylight time.
        public let start: Rule
        public let end: Rule
    }

    /// A day of the year and a local time of day on it.
    public struct Rule: Hashable, Sendable {
        public enum Day: Hashable, Sendable {
            /// `Jn`: 1…365, February 29 never counted.
            case julianNoLeap(Int)
            /// `n`: 0…365, February 29 counted.
            case zeroBased(Int)
            /// `Mm.w.d`: weekday d (0 = Sunday) of week w (5 = the last) of month m.
            case monthWeekDay(month: Int, week: Int, weekday: Int)
        }

        public let day: Day
        /// Seconds after local midnight; may be negative or pass the day (`/-1`, `/25`).
        public let time: Int64

        /// The first second of this rule in `year` as local seconds since 1970.
        func localSeconds(in year: Int) -> Int64 {
            Int64(dayOrdinal(in: year)) * 86_400 + time
        }

        private func dayOrdinal(in year: Int) -> Int {
            let january1 = CivilCalendar.days(year: year, month: 1, day: 1)
            switch day {
            case .julianNoLeap(let n):
                let leap = CivilCalendar.daysIn(month: 2, year: year) == 29
                return january1 + n - 1 + (leap && n >= 60 ? 1 : 0)
            case .zeroBased(let n):
                return january1 + n
            case let .monthWeekDay(month, week, weekday):
                let first = CivilCalendar.days(year: year, month: month, day: 1)
                let firstWeekday = CivilCalendar.sundayBasedWeekday(days: first)
                var dayOfMonth = 1 + (weekday - firstWeekday + 7) % 7 + (week - 1) * 7
                while dayOfMonth > CivilCalendar.daysIn(month: month, year: year) { dayOfMonth -= 7 }
                return first + dayOfMonth - 1
            }
        }
    }

    /// The offset in force at `utcSeconds`.
    public func offset(at utcSeconds: Int64) -> Int64 {
        guard daylight != nil else { return standardOffset }
        let year = CivilCalendar.date(days: Int(floorDivide(utcSeconds, 86_400))).year
        var result = standardOffset
        // The year before can still be in force on January 1st, and the next one's first change can
        // come before it in UTC (a rule at 00:00 local east of Greenwich).
        for transition in transitions(in: (year - 1)...(year + 1)) where transition.utc <= utcSeconds { result = transition.offset }
        return result
    }

    /// Its offset changes in `years`, in time order (none without daylight saving time; only the
    /// start, each year, when daylight time covers the whole year).
    public func transitions(in years: ClosedRange<Int>) -> [(utc: Int64, offset: Int64)] {
        guard let daylight, daylight.offset != standardOffset else { return [] }
        var result: [(utc: Int64, offset: Int64)] = []
        for year in years where (1...9999).contains(year) {
            let start = daylight.start.localSeconds(in: year) - standardOffset
            let end = daylight.end.localSeconds(in: year) - daylight.offset
            let yearLength = Int64(CivilCalendar.days(year: year + 1, month: 1, day: 1) - CivilCalendar.days(year: year, month: 1, day: 1)) * 86_400
            // Daylight time all year (`0/0,J365/25`): the end meets the next year's start.
            if end - start >= yearLength {
                result.append((start, daylight.offset))
                continue
            }
            let pair = [(start, daylight.offset), (end, standardOffset)]
            result += start < end ? pair : pair.reversed()
        }
        return result
    }
}

extension POSIXTZ {
    /// Parses a footer's TZ string; nil if it is not one. An empty footer means "no rule".
    public init?(_ text: some StringProtocol) {
        var scanner = Scanner(Array(text.utf8))
        guard scanner.name(), let standard = scanner.offset(hoursUpTo: 24) else { return nil }
        standardOffset = -standard
        if scanner.atEnd {
            daylight = nil
            return
        }
        guard scanner.name() else { return nil }
        // Without an offset, daylight time is an hour ahead of standard time.
        let daylightOffset = scanner.atEnd || scanner.peek == UInt8(ascii: ",") ? standardOffset + 3600 : scanner.offset(hoursUpTo: 24).map { -$0 }
        guard let daylightOffset else { return nil }
        // Without rules, POSIX leaves them to the implementation; glibc and zic take the US rules.
        let rules = scanner.atEnd ? POSIXTZ("EST5EDT,M3.2.0,M11.1.0")!.daylight.map { ($0.start, $0.end) }
            : scanner.skip(",") ? scanner.rule().flatMap { start in scanner.skip(",") ? scanner.rule().map { (start, $0) } : nil } : nil
        guard let (start, end) = rules, scanner.atEnd else { return nil }
        daylight = Daylight(offset: daylightOffset, start: start, end: end)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index == bytes.count }
        var peek: UInt8? { atEnd ? nil : bytes[index] }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard peek == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }

        /// `<+0330>` or three or more letters.
        mutating func name() -> Bool {
            if skip("<") {
                let start = index
                while let byte = peek, byte != UInt8(ascii: ">") { index += 1 }
                return index - start >= 3 && skip(">")
            }
            let start = index
            while let byte = peek, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) {
                index += 1
            }
            return index - start >= 3
        }

        mutating func number(upTo limit: Int) -> Int? {
            let start = index
            var value = 0
            while let byte = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), index - start < 3 {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                index += 1
            }
            return index > start && value <= limit ? value : nil
        }

        /// `[+-]hh[:mm[:ss]]` in seconds, as written (west positive for offsets).
        mutating func offset(hoursUpTo limit: Int) -> Int64? {
            let sign: Int64 = skip("-") ? -1 : 1
            if sign == 1 { _ = skip("+") }
            guard let hours = number(upTo: limit) else { return nil }
            var seconds = Int64(hours) * 3600
            for unit: Int64 in [60, 1] {
                guard skip(":") else { break }
                guard let part = number(upTo: 59) else { return nil }
                seconds += Int64(part) * unit
            }
            return sign * seconds
        }

        /// A date, then an optional `/time` (02:00 when absent).
        mutating func rule() -> Rule? {
            let day: Rule.Day
            if skip("M") {
                guard let month = number(upTo: 12), month >= 1, skip("."), let week = number(upTo: 5), week >= 1,
                      skip("."), let weekday = number(upTo: 6) else { return nil }
                day = .monthWeekDay(month: month, week: week, weekday: weekday)
            } else if skip("J") {
                guard let n = number(upTo: 365), n >= 1 else { return nil }
                day = .julianNoLeap(n)
            } else {
                guard let n = number(upTo: 365) else { return nil }
                day = .zeroBased(n)
            }
            guard skip("/") else { return Rule(day: day, time: 7200) }
            return offset(hoursUpTo: 167).map { Rule(day: day, time: $0) }
        }
    }
}
