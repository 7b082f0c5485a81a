import HeapModule
import LHTSchema
import ReminderPlanning

/// The next undecided occurrence of every enabled reminder, in a min-heap by instant, so the planner
/// wakes exactly at the next decision instead of scanning all reminders.
///
/// Entries are never removed from the middle: an edited reminder gets a new entry and the old one
/// is recognised as stale when it surfaces (`scheduled[id]` no longer is its occurrence).
struct Scheduler {
    private var heap = Heap<Entry>()
    /// Each reminder's live occurrence, kept from scheduling so deciding does not compute it again.
    private var scheduled: [RecordID: PlannedOccurrence] = [:]

    /// Small on purpose: the heap moves entries on every push and pop.
    struct Entry: Comparable {
        let at: Int64
        let reminder: RecordID

        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.at, lhs.reminder) < (rhs.at, rhs.reminder) }
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
            scheduled[reminder.id] = nil
            return
        }
        scheduled[reminder.id] = next
        heap.insert(Entry(at: next.at.millisecondsSince1970, reminder: reminder.id))
    }

    mutating func unschedule(_ id: RecordID) { scheduled[id] = nil }

    /// Removes and returns the earliest live entry if it is due at or before `now`. The caller
    /// reschedules the reminder after deciding it.
    mutating func popNext(through now: Instant) -> (reminder: RecordID, occurrence: PlannedOccurrence)? {
        dropStale()
        guard let top = heap.min, top.at <= now.millisecondsSince1970,
              let occurrence = scheduled.removeValue(forKey: top.reminder) else { return nil }
        heap.removeMin()
        return (top.reminder, occurrence)
    }

    private mutating func dropStale() {
        while let top = heap.min, scheduled[top.reminder]?.at.millisecondsSince1970 != top.at { heap.removeMin() }
    }
}
