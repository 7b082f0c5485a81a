import CPrefetch
import LHTSchema
import ReminderPlanning
import ZoneRules

/// The next undecided occurrence of every enabled reminder, in a queue by instant (`MinuteQueue`), so
/// the planner wakes exactly at the next decision instead of scanning all reminders.
///
/// Reminders are known by their row in the planner's `ReminderTable` (the table gives a row's
/// reminder back): a row's reminder is unscheduled before the row is given to another. Each
/// reminder has at most one *live* entry: the one carrying the instant and the ticket its row holds.
/// Entries are never removed from the middle of the queue; rescheduling (an edit, a zone change)
/// or unscheduling makes the old entry stale, and a stale entry is dropped when it surfaces.
/// Rescheduling to the same occurrence keeps the entry (a `user.put` that changes nothing in a
/// reminder's timing adds nothing), and when stale entries outnumber live ones they are dropped,
/// so the queue never holds more than `2 × live + compactionSlack` entries: memory follows the
/// number of reminders, not the number of edits.
struct Scheduler {
    /// A reminder's row in the planner's `ReminderTable`.
    typealias Row = Int32

    private var queue = MinuteQueue<Entry>()
    /// Each row's live occurrence and the ticket of its one live queue entry, packed into 16 bytes
    /// (`Live.unscheduled` where none). An array by row, not a dictionary by id: loading a million
    /// reminders writes it in order instead of hashing each id into scattered memory.
    private var live: [Live] = []
    /// Rows with a scheduled occurrence.
    private(set) var scheduledCount = 0
    /// Increases with every entry pushed: an entry is live iff its row's `Live` holds its ticket and
    /// instant. Not private: a test moves it on by 2^32.
    var lastTicket: UInt64 = 0

    /// Stale entries tolerated beyond the live count before the queue is rebuilt.
    static let compactionSlack = 64

    /// 16 bytes; occurrences at one instant come out by row. Of the ticket only its low 32 bits: an
    /// entry is live while its row holds both its instant and those bits, and popping it gives the
    /// row's live occurrence at that instant, so a ticket that wrapped cannot let one out twice or early.
    struct Entry: MinuteOrdered {
        let at: Int64
        let row: Row
        let ticket: UInt32

        init(_ live: Live, row: Row) {
            at = live.at
            self.row = row
            ticket = UInt32(truncatingIfNeeded: live.ticket)
        }

        var minute: Int64 { floorDivide(at, 60_000) }

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.at != rhs.at ? lhs.at < rhs.at : lhs.row < rhs.row }
    }

    /// An occurrence and a ticket in two words: the instant, then the ticket (48 bits, never
    /// exhausted), the rule day as an offset from the instant's UTC day (within ±2) and the local minute.
    struct Live: Equatable {
        let at: Int64
        /// 0 only for `unscheduled`: tickets start at 1.
        let packed: UInt64

        static let unscheduled = Live(at: .min, packed: 0)

        private init(at: Int64, packed: UInt64) {
            self.at = at
            self.packed = packed
        }

        init(_ occurrence: PlannedOccurrence, ticket: UInt64) {
            at = occurrence.at.millisecondsSince1970
            let dayOffset = UInt64(occurrence.day.ordinal - Live.utcDay(at) + 8)
            packed = ticket << 16 | dayOffset << 11 | UInt64(occurrence.localTime.minutesSinceMidnight)
        }

        var ticket: UInt64 { packed >> 16 }

        var occurrence: PlannedOccurrence {
            let day = LocalDay(ordinal: Live.utcDay(at) + Int(packed >> 11 & 0x1F) - 8)
            let minutes = Int(packed & 0x7FF)
            return PlannedOccurrence(day: day, weekday: day.weekday, at: Instant(millisecondsSince1970: at),
                                     localTime: LocalTime(hour: minutes / 60, minute: minutes % 60)!)
        }

        func isSameOccurrence(as other: Live) -> Bool { at == other.at && packed & 0xFFFF == other.packed & 0xFFFF }

        private static func utcDay(_ milliseconds: Int64) -> Int {
            Int(floorDivide(milliseconds, 86_400_000))
        }
    }

    /// The instant of the earliest live entry.
    var nextInstant: Instant? {
        mutating get {
            dropStale()
            return queue.min.map { Instant(millisecondsSince1970: $0.at) }
        }
    }

    /// What scheduling needs of a reminder.
    struct Rule {
        let id: RecordID
        let time: LocalTime
        let weekdays: WeekdayMask
        let enabled: Bool

        init(id: RecordID, time: LocalTime, weekdays: WeekdayMask, enabled: Bool) {
            self.id = id
            self.time = time
            self.weekdays = weekdays
            self.enabled = enabled
        }

        init(_ reminder: Reminder) {
            self.init(id: reminder.id, time: reminder.time, weekdays: WeekdayMask(reminder.weekdays), enabled: reminder.enabled)
        }
    }

    /// (Re)schedules `reminder`, in `row`, at its first occurrence at or after `from`, or unschedules it.
    mutating func schedule(_ reminder: Reminder, row: Row, zone: ZoneID, from: Instant) {
        let rule = Rule(reminder)
        guard rule.enabled, let next = OccurrenceCalendar.next(at: rule.time, on: rule.weekdays, in: zone.rules, from: from) else {
            unschedule(row)
            return
        }
        let candidate = Live(next, ticket: lastTicket + 1)
        // Its live entry already stands for that occurrence: keep it (a `user.put` that changes nothing adds nothing).
        if Int(row) < live.count, live[Int(row)].isSameOccurrence(as: candidate) { return }
        lastTicket += 1
        setLive(candidate, at: row)
        queue.insert(Entry(candidate, row: row))
        compactIfMostlyStale()
    }

    /// Start-up: schedules every reminder `forEachRule` hands over (with its row) into an empty
    /// scheduler, the queue built in one pass instead of an insertion each. Reminders with the same zone, time, weekdays
    /// and start (most of them, after a restart) share one occurrence computation.
    mutating func scheduleAll(expecting count: Int, _ forEachRule: (_ schedule: (Rule, Row, ZoneID, Instant) -> Void) throws -> Void) rethrows {
        precondition(live.isEmpty && queue.isEmpty, "scheduleAll fills an empty scheduler")
        // Occurrences computed so far, by zone and start, then by time and weekdays. Rules mostly
        // come user by user, so consecutive ones share a zone and a start: the group in hand is
        // kept aside, and a rule costs one lookup by a single integer.
        struct Group: Hashable { let zone: ObjectIdentifier, from: Int64 }
        var computed: [Group: [Int: PlannedOccurrence?]] = [:]
        var current: (zone: ZoneID, rules: ZoneRules, group: Group, occurrences: [Int: PlannedOccurrence?])?
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        live.reserveCapacity(count)
        try forEachRule { rule, row, zone, from in
            guard rule.enabled else { return }
            if current == nil || current!.zone.identifier != zone.identifier || current!.group.from != from.millisecondsSince1970 {
                if let current { computed[current.group] = current.occurrences }
                let rules = zone.rules
                let group = Group(zone: ObjectIdentifier(rules), from: from.millisecondsSince1970)
                current = (zone, rules, group, computed[group] ?? [:])
            }
            let key = rule.time.minutesSinceMidnight << 7 | Int(rule.weekdays.bits)
            let next: PlannedOccurrence?
            if let known = current!.occurrences[key] {
                next = known
            } else {
                next = OccurrenceCalendar.next(at: rule.time, on: rule.weekdays, in: current!.rules, from: from)
                current!.occurrences[key] = next
            }
            guard let next else { return }
            lastTicket += 1
            let occurrence = Live(next, ticket: lastTicket)
            setLive(occurrence, at: row)
            entries.append(Entry(occurrence, row: row))
        }
        queue = MinuteQueue(entries)
    }

    mutating func unschedule(_ row: Row) {
        guard Int(row) < live.count, live[Int(row)] != .unscheduled else { return }
        setLive(.unscheduled, at: row)
        compactIfMostlyStale()
    }

    /// The rows of the two entries after the one `popNext` gave last (stale or not), for the caller
    /// to prefetch what it will read of them while it decides this one; `popNext` prefetched the next's
    /// live occurrence. The rows are about a million apart: each read was a cache miss.
    private(set) var upcomingRows: (next: Row?, after: Row?) = (nil, nil)

    /// Removes and returns the earliest live occurrence, with its reminder's row, if it is due at or
    /// before `now`. The caller reschedules the reminder after deciding it. The entry stays first,
    /// stale, until the next look at the queue drops it.
    mutating func popNext(through now: Instant) -> (row: Row, occurrence: PlannedOccurrence)? {
        dropStale()
        guard let top = queue.min, top.at <= now.millisecondsSince1970 else { return nil }
        let occurrence = live[Int(top.row)].occurrence
        setLive(.unscheduled, at: top.row)
        let (next, after) = queue.following
        if let next, Int(next.row) < live.count { live.withUnsafeBufferPointer { lht_prefetch($0.baseAddress! + Int(next.row)) } }
        upcomingRows = (next?.row, after?.row)
        return (top.row, occurrence)
    }

    /// Puts `new` in `row`, growing the array to it, and keeps `scheduledCount`.
    private mutating func setLive(_ new: Live, at row: Row) {
        if Int(row) >= live.count { live.append(contentsOf: repeatElement(.unscheduled, count: Int(row) + 1 - live.count)) }
        scheduledCount += (new == .unscheduled ? 0 : 1) - (live[Int(row)] == .unscheduled ? 0 : 1)
        live[Int(row)] = new
    }

    /// Tickets are never reused, so an entry whose row now holds another ticket or instant (or none)
    /// is stale; the instant also tells the one whose low bits a ticket 2^32 on has again.
    private func isLive(_ entry: Entry) -> Bool {
        guard Int(entry.row) < live.count else { return false }
        let current = live[Int(entry.row)]
        return current.at == entry.at && UInt32(truncatingIfNeeded: current.ticket) == entry.ticket
    }

    private mutating func dropStale() {
        while let top = queue.min, !isLive(top) { queue.removeMin() }
    }

    /// Rebuilds the queue from the live occurrences (linear time) once stale entries outnumber live
    /// ones by the slack; amortised over the pushes that made them stale, a constant cost per push.
    private mutating func compactIfMostlyStale() {
        guard queue.count > 2 * scheduledCount + Self.compactionSlack else { return }
        queue = MinuteQueue(queue.unordered.filter(isLive))
    }

    // MARK: For tests

    /// Entries in the queue, live and stale.
    var entryCount: Int { queue.count }
    /// Queue entries that are some reminder's live entry, by row (each should be 1).
    var liveEntriesByRow: [Row: Int] {
        var counts: [Row: Int] = [:]
        for entry in queue.unordered where isLive(entry) { counts[entry.row, default: 0] += 1 }
        return counts
    }
}
