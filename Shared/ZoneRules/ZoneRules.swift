/// One zone's UTC offsets, read from a TZif file (RFC 8536) as glibc and Python's `zoneinfo` read
/// it: the 64-bit table of a version 2+ file (the 32-bit one of version 1), and after its last
/// transition the footer's POSIX TZ rule.
///
/// The footer's transitions are written out into the table up to `tableEndYear`, so an offset is
/// one binary search over a few hundred instants for any date a planner looks at; only later ones
/// evaluate the rule. Immutable, so one value serves every thread.
public final class ZoneRules: Sendable, Equatable {
    /// Instants (UTC seconds) where the offset changes, ascending; `offsets[i]` is in force from `starts[i]`.
    let starts: [Int64]
    let offsets: [Int64]
    /// In force before the first transition (RFC 8536: time type 0).
    let initialOffset: Int64
    /// After the last transition of the file; nil: its last offset stays.
    public let footer: POSIXTZ?
    /// The table holds the footer's transitions through this year.
    static let tableEndYear = 2100
    /// From here on the footer is asked directly.
    private let tableEnd: Int64

    init(transitions: [(utc: Int64, offset: Int64)], initialOffset: Int64, footer: POSIXTZ?) {
        var starts: [Int64] = [], offsets: [Int64] = []
        var last = initialOffset
        var generated: [(utc: Int64, offset: Int64)] = []
        if let footer {
            let lastUTC = transitions.last?.utc ?? .min
            let fromYear = transitions.last.map { CivilCalendar.date(days: Int(floorDivide($0.utc, 86_400))).year } ?? 1900
            generated = footer.transitions(in: max(1900, fromYear)...Self.tableEndYear).filter { $0.utc > lastUTC }
        }
        // Entries that change nothing are left out: the table lists changes of the offset only.
        for (utc, offset) in transitions + generated where offset != last {
            starts.append(utc)
            offsets.append(offset)
            last = offset
        }
        self.starts = starts
        self.offsets = offsets
        self.initialOffset = initialOffset
        self.footer = footer
        tableEnd = footer == nil ? .max : Int64(CivilCalendar.days(year: Self.tableEndYear + 1, month: 1, day: 1)) * 86_400
    }

    /// The offset (seconds east of UTC) in force at `utcSeconds`.
    public func offset(at utcSeconds: Int64) -> Int64 {
        if utcSeconds >= tableEnd, let footer { return footer.offset(at: utcSeconds) }
        // The last start at or before the instant.
        var low = 0, high = starts.count
        while low < high {
            let middle = (low + high) >> 1
            if starts[middle] <= utcSeconds { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? initialOffset : offsets[low - 1]
    }

    /// Offset changes in `[from, through)`: the first instant with the new offset, and the offsets on
    /// either side.
    public func transitions(from: Int64, through: Int64) -> [(utc: Int64, before: Int64, after: Int64)] {
        var result: [(utc: Int64, before: Int64, after: Int64)] = []
        for (index, start) in starts.enumerated() where start >= from && start < through {
            result.append((start, index == 0 ? initialOffset : offsets[index - 1], offsets[index]))
        }
        return result
    }

    public static func == (lhs: ZoneRules, rhs: ZoneRules) -> Bool {
        lhs.starts == rhs.starts && lhs.offsets == rhs.offsets && lhs.initialOffset == rhs.initialOffset && lhs.footer == rhs.footer
    }

    /// UTC all the time: the rules of a zone that could not be read.
    public static let utc = ZoneRules(transitions: [], initialOffset: 0, footer: nil)
}

/// Why bytes are not a zone's rules.
public enum TZifError: Error, Equatable, Sendable {
    case notTZif
    case truncated
    /// A count, index, offset or order the format does not allow.
    case invalid(String)
    /// Leap-second files (`right/…`) count TAI seconds; the services count POSIX seconds.
    case leapSeconds
    case badFooter(String)
}

extension ZoneRules {
    /// Reads a TZif file's bytes. Never traps: anything malformed or cut short is a `TZifError`.
    public convenience init(tzif bytes: [UInt8]) throws(TZifError) {
        var reader = TZifReader(bytes: bytes)
        let first = try reader.header()
        guard first.version >= 2 else {
            let block = try reader.block(first, timeSize: 4)
            self.init(transitions: block.transitions, initialOffset: block.initialOffset, footer: nil)
            return
        }
        // Version 2+: the 32-bit block is skipped for the 64-bit one and the footer after it.
        try reader.skip(first.blockLength(timeSize: 4))
        let second = try reader.header()
        let block = try reader.block(second, timeSize: 8)
        guard try reader.byte() == UInt8(ascii: "\n") else { throw .badFooter("no newline before it") }
        let text = try reader.line()
        var footer: POSIXTZ?
        if !text.isEmpty {
            guard let rule = POSIXTZ(text) else { throw .badFooter(text) }
            footer = rule
        }
        self.init(transitions: block.transitions, initialOffset: block.initialOffset, footer: footer)
    }
}

/// The byte-level reading of RFC 8536 §3, each read checked against the end.
private struct TZifReader {
    let bytes: [UInt8]
    var index = 0

    struct Header {
        let version: UInt8
        let isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt: Int

        func blockLength(timeSize: Int) -> Int {
            timecnt * timeSize + timecnt + typecnt * 6 + charcnt + leapcnt * (timeSize + 4) + isstdcnt + isutcnt
        }
    }

    struct Block {
        let transitions: [(utc: Int64, offset: Int64)]
        let initialOffset: Int64
    }

    mutating func byte() throws(TZifError) -> UInt8 {
        guard index < bytes.count else { throw .truncated }
        index += 1
        return bytes[index - 1]
    }

    mutating func skip(_ count: Int) throws(TZifError) {
        guard count >= 0, count <= bytes.count - index else { throw .truncated }
        index += count
    }

    /// A big-endian two's complement integer of `size` bytes.
    mutating func integer(size: Int) throws(TZifError) -> Int64 {
        guard size <= bytes.count - index else { throw .truncated }
        var value: UInt64 = 0
        for offset in 0..<size { value = value << 8 | UInt64(bytes[index + offset]) }
        index += size
        let unused = UInt64(64 - size * 8)
        return Int64(bitPattern: value << unused) >> Int64(unused)
    }

    mutating func line() throws(TZifError) -> String {
        guard let end = bytes[index...].firstIndex(of: UInt8(ascii: "\n")) else { throw .badFooter("no newline after it") }
        defer { index = end + 1 }
        return String(decoding: bytes[index..<end], as: UTF8.self)
    }

    mutating func header() throws(TZifError) -> Header {
        guard bytes.count - index >= 44 else { throw bytes.count - index >= 4 && bytes[index..<index + 4].elementsEqual("TZif".utf8) ? .truncated : .notTZif }
        guard bytes[index..<index + 4].elementsEqual("TZif".utf8) else { throw .notTZif }
        let version = bytes[index + 4] == 0 ? 1 : bytes[index + 4] &- UInt8(ascii: "0")
        guard (1...4).contains(version) else { throw .invalid("version byte \(bytes[index + 4])") }
        index += 20
        var counts: [Int] = []
        for _ in 0..<6 {
            let count = try integer(size: 4)
            // Far more than any real file, small enough that no length computed from them overflows.
            guard (0...1_000_000).contains(count) else { throw .invalid("count \(count)") }
            counts.append(Int(count))
        }
        let header = Header(version: version, isutcnt: counts[0], isstdcnt: counts[1], leapcnt: counts[2],
                            timecnt: counts[3], typecnt: counts[4], charcnt: counts[5])
        guard header.typecnt >= 1, header.charcnt >= 1, header.isutcnt == 0 || header.isutcnt == header.typecnt,
              header.isstdcnt == 0 || header.isstdcnt == header.typecnt else { throw .invalid("counts") }
        guard header.leapcnt == 0 else { throw .leapSeconds }
        return header
    }

    /// The data block after `header`; the designations and indicator flags are not needed.
    mutating func block(_ header: Header, timeSize: Int) throws(TZifError) -> Block {
        guard header.blockLength(timeSize: timeSize) <= bytes.count - index else { throw .truncated }
        var times: [Int64] = []
        for _ in 0..<header.timecnt {
            let time = try integer(size: timeSize)
            if let last = times.last, time <= last { throw .invalid("transition times out of order") }
            times.append(time)
        }
        var types: [Int] = []
        for _ in 0..<header.timecnt {
            let type = Int(try byte())
            guard type < header.typecnt else { throw .invalid("time type \(type) of \(header.typecnt)") }
            types.append(type)
        }
        var offsets: [Int64] = []
        for _ in 0..<header.typecnt {
            let offset = try integer(size: 4)
            // RFC 8536: -2^31 is not allowed; real offsets stay within a day.
            guard abs(offset) < 86_400 else { throw .invalid("offset \(offset)") }
            offsets.append(offset)
            try skip(2)
        }
        try skip(header.charcnt + header.isstdcnt + header.isutcnt)
        return Block(transitions: zip(times, types).map { ($0, offsets[$1]) }, initialOffset: offsets[0])
    }
}
