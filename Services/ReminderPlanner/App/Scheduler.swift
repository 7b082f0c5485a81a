import HeapModule
import LHTSchema
import ReminderPlanning

/// The next undecided occurrence of every enabled reminder, in a min-heap by instant, so the planner
/// wakes exactly at the next decision instead of scanning all reminders.
///
/// Each reminder has at most one *live* entry: the one carrying the ticket its slot holds. Entries
/// are never removed from the middle of the heap; rescheduling to another instant (an edit, a zone
/// change) or unscheduling makes the old entry stale, and a stale entry is dropped when it surfaces.
/// Rescheduling to the same instant keeps the entry (a `user.put` that changes nothing in a
/// reminder's timing adds nothing), and when stale entries outnumber live ones the heap is rebuilt
/// from the slots, so it never holds more than `2 × live + compactionSlack` entries: memory follows
/// the number of reminders, not the number of edits.
struct Scheduler {
    private var heap = Heap<Entry>()
    /// Each reminder's live occurrence, kept from scheduling so deciding does not compute it again,
    /// with the ticket of its one live heap entry.
    private var scheduled: [RecordID: Slot] = [:]
    /// Increases with every entry pushed: an entry is live iff its reminder's slot holds its ticket.
    private var lastTicket: UInt64 = 0

    /// Stale entries tolerated beyond the live count before the heap is rebuilt.
    static let compactionSlack = 64

    private struct Slot {
        let occurrence: PlannedOccurrence
        let ticket: UInt64
    }

    /// Small on purpose: the heap moves entries on every push and pop.
    struct Entry: Comparable {
        let at: Int64
        let reminder: RecordID
        let ticket: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.at, lhs.reminder, lhs.ticket) < (rhs.at, rhs.reminder, rhs.ticket) }
    }

    /// The instant of the earliest live entry.
    var nextInstant: Instant? {
        mutating get {
            dropStale()
            return heap.min.map { Instant(millisecondsSince1970: $0.at) }
        }
    }

    /// (Re)schedules `reminder`'s first occurrence at or after `from`, or unschedules it.
    mutating func schedule(_ reminder: Reminder, zone: ZoneID, from: Instant) {
        guard reminder.enabled, !reminder.weekdays.isEmpty,
              let next = OccurrenceCalendar.next(at: reminder.time, on: reminder.weekdays, in: zone.timeZone, from: from) else {
            unschedule(reminder.id)
            return
        }
        if let current = scheduled[reminder.id], current.occurrence.at == next.at {
            // Its live entry already stands at that instant: keep it (with the occurrence as now computed).
            scheduled[reminder.id] = Slot(occurrence: next, ticket: current.ticket)
            return
        }
        lastTicket += 1
        scheduled[reminder.id] = Slot(occurrence: next, ticket: lastTicket)
        heap.insert(Entry(at: next.at.millisecondsSince1970, reminder: reminder.id, ticket: lastTicket))
        compactIfMostlyStale()
    }

    mutating func unschedule(_ id: RecordID) {
        if scheduled.removeValue(forKey: id) != nil { compactIfMostlyStale() }
    }

    /// Removes and returns the earliest live entry if it is due at or before `now`. The caller
    /// reschedules the reminder after deciding it.
    mutating func popNext(through now: Instant) -> (reminder: RecordID, occurrence: PlannedOccurrence)? {
        dropStale()
        guard let top = heap.min, top.at <= now.millisecondsSince1970,
              let slot = scheduled.removeValue(forKey: top.reminder) else { return nil }
        heap.removeMin()
        return (top.reminder, slot.occurrence)
    }

    private func isLive(_ entry: Entry) -> Bool { scheduled[entry.reminder]?.ticket == entry.ticket }

    private mutating func dropStale() {
        while let top = heap.min, !isLive(top) { heap.removeMin() }
    }

    /// Rebuilds the heap from the slots (linear time) once stale entries outnumber live ones by the
    /// slack; amortised over the pushes that made them stale, a constant cost per push.
    private mutating func compactIfMostlyStale() {
        guard heap.count > 2 * scheduled.count + Self.compactionSlack else { return }
        heap = Heap(scheduled.map { Entry(at: $0.value.occurrence.at.millisecondsSince1970, reminder: $0.key, ticket: $0.value.ticket) })
    }

    // MARK: For tests

    /// Entries in the heap, live and stale.
    var entryCount: Int { heap.count }
    /// Reminders with a scheduled occurrence.
    var scheduledCount: Int { scheduled.count }
    /// Heap entries that are some reminder's live entry, by reminder (each should be 1).
    var liveEntriesByReminder: [RecordID: Int] {
        var counts: [RecordID: Int] = [:]
        for entry in heap.unordered where isLive(entry) { counts[entry.reminder, default: 0] += 1 }
        return counts
    }
}
