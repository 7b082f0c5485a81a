import Foundation
import LHTSchema

/// Something logged that may cover an occurrence: a session, or a NoAlc entry about a day.
public struct CoverageCandidate: Sendable, Hashable {
    public enum Record: Sendable, Hashable {
        /// A mindfulness or workout session `[start, end]`.
        case session(start: Instant, end: Instant)
        /// A NoAlc entry about `day` (whenever it was logged).
        case noalcEntry(day: LocalDay)
    }

    /// The session's or entry's id: what an occurrence it covers names as its cause.
    public let id: RecordID
    public let userId: UserID
    public let activity: Activity
    public let record: Record
    /// When it was logged, as an order: lower was logged first. For sessions the session log's
    /// `seq`; for NoAlc entries the order the planner stored them in.
    public let loggedOrder: Int64

    public static func session(id: RecordID, userId: UserID, activity: Activity, start: Instant, end: Instant,
                               loggedOrder: Int64) -> CoverageCandidate {
        CoverageCandidate(id: id, userId: userId, activity: activity, record: .session(start: start, end: end), loggedOrder: loggedOrder)
    }

    public static func noalcEntry(id: RecordID, userId: UserID, day: LocalDay, loggedOrder: Int64) -> CoverageCandidate {
        CoverageCandidate(id: id, userId: userId, activity: .noalc, record: .noalcEntry(day: day), loggedOrder: loggedOrder)
    }
}

/// When logged activity cancels an occurrence (SEMANTICS §2). Coverage is derived from the stored
/// sessions and entries each time, never kept as a list: `cause(of:of:candidates:)` decides it from
/// whatever candidates the caller found, and the predicates below are its parts.
public enum Coverage {
    /// What covers `occurrence` of `reminder`, if anything: of the candidates that cover it (same
    /// user and activity; a session overlapping the look-back window, or a NoAlc entry about the
    /// target day), the first logged — the session log's lowest `seq`, the day's first entry. Nil
    /// when none does.
    ///
    /// This is the whole rule: the caller may pass any superset of what could cover (a query
    /// narrowed on an index, everything it has), and the answer is the same.
    public static func cause(of occurrence: PlannedOccurrence, of reminder: Reminder, candidates: [CoverageCandidate]) -> RecordID? {
        var first: CoverageCandidate?
        for candidate in candidates where covers(candidate, occurrence, of: reminder) {
            // Strictly lower: among equal orders the first passed stays, so the answer is stable.
            if first.map({ candidate.loggedOrder < $0.loggedOrder }) ?? true { first = candidate }
        }
        return first?.id
    }

    /// Whether `candidate` covers `occurrence` of `reminder`: sessions cover mindfulness and workout
    /// reminders by overlap, NoAlc entries cover NoAlc reminders by target day; only the same user's
    /// and activity's.
    public static func covers(_ candidate: CoverageCandidate, _ occurrence: PlannedOccurrence, of reminder: Reminder) -> Bool {
        guard candidate.userId == reminder.userId, candidate.activity == reminder.activity else { return false }
        switch candidate.record {
        case .session(let start, let end):
            return reminder.activity.isSession
                && sessionCovers(start: start, end: end, occurrenceAt: occurrence.at, lookbackHours: reminder.lookbackHours)
        case .noalcEntry(let day):
            return reminder.activity == .noalc && noalcEntryCovers(entryDay: day, ruleDay: occurrence.day, ruleTime: reminder.time)
        }
    }

    /// `T − L hours` in real elapsed time: across a DST change the window is still L hours long,
    /// not "the same wall-clock time L hours earlier".
    public static func windowStart(of at: Instant, lookbackHours: Int) -> Instant {
        at.adding(seconds: -Int64(lookbackHours) * 3600)
    }

    /// A session `[start, end]` covers occurrence T when it overlaps `[T − L, T]`: it started no later
    /// than T (activity that starts after T never counts) and was still going at or after `T − L`.
    /// A point session (`start == end`) reduces to seed `000_…`'s inclusive check
    /// `T − L <= completedAt <= T` (SEMANTICS §2).
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
    /// (Comparing the logging time with a look-back window is the shipped app's trap (SEMANTICS §2):
    /// logging yesterday at 09:05 cancelled tomorrow's 09:00 check-in.)
    public static func noalcEntryCovers(entryDay: LocalDay, ruleDay: LocalDay, ruleTime: LocalTime) -> Bool {
        entryDay == noalcTargetDay(ruleDay: ruleDay, ruleTime: ruleTime)
    }
}
