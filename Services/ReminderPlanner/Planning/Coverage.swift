import Foundation
import LHTSchema

/// When logged activity cancels an occurrence (SEMANTICS §2). Coverage is derived from the stored
/// sessions and entries each time, never kept as a list, so these are plain predicates.
public enum Coverage {
    /// `T − L hours` in real elapsed time: across a DST change the window is still L hours long,
    /// not "the same wall-clock time L hours earlier".
    public static func windowStart(of at: Instant, lookbackHours: Int) -> Instant {
        at.adding(seconds: -Int64(lookbackHours) * 3600)
    }

    /// A session `[start, end]` covers occurrence T when it overlaps `[T − L, T]`: it started no later
    /// than T (activity that starts after T never counts) and was still going at or after `T − L`.
    /// A point session (`start == end`) reduces to the seed's inclusive `T − L <= completedAt <= T`.
    public static func sessionCovers(start: Instant, end: Instant, occurrenceAt: Instant, lookbackHours: Int) -> Bool {
        start <= occurrenceAt && end >= windowStart(of: occurrenceAt, lookbackHours: lookbackHours)
    }

    /// From this rule time on, a NoAlc check-in asks about the same evening (seed `002_…`, Day Assignment).
    public static let noalcEveningStart = LocalTime(hour: 18, minute: 0)!

    /// The day a NoAlc occurrence asks about: D itself for rule times from 18:00 (exactly 18:00 is
    /// "today"), otherwise D − 1 ("how was yesterday?").
    public static func noalcTargetDay(ruleDay: LocalDay, ruleTime: LocalTime) -> LocalDay {
        ruleTime >= noalcEveningStart ? ruleDay : ruleDay.adding(days: -1)
    }

    /// A NoAlc entry covers the occurrence when it is about the target day — whenever it was logged.
    /// (Comparing the logging time with a look-back window is the shipped app's trap: logging
    /// yesterday at 09:05 cancelled tomorrow's 09:00 check-in.)
    public static func noalcEntryCovers(entryDay: LocalDay, ruleDay: LocalDay, ruleTime: LocalTime) -> Bool {
        entryDay == noalcTargetDay(ruleDay: ruleDay, ruleTime: ruleTime)
    }
}
