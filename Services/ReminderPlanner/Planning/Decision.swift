import Foundation
import LHTSchema

/// The one decision taken for an occurrence at T (SEMANTICS §3).
public enum DecisionOutcome: Sendable, Hashable {
    /// Publish `reminder.due`; the notifier turns it into a notification.
    case due
    /// Publish `reminder.suppressed`; `cause` is the covering session's or NoAlc entry's id.
    case suppressed(cause: String)
    /// Publish `reminder.skipped`: the user was paused at T.
    case skipped
}

public enum Decision {
    /// Pause wins over everything; a covered occurrence is suppressed unless the user restored it
    /// (`reminder.restore`, the manual override); everything else is due.
    ///
    /// `coveringCause` is nil when nothing covers the occurrence *or when the planner cannot know*
    /// (session log gap, session logger silent): the fail-safe is to fire, because a missed reminder
    /// is worse than an extra one (seed `003_…`).
    public static func decide(paused: Bool, coveringCause: String?, restored: Bool) -> DecisionOutcome {
        if paused { return .skipped }
        if let cause = coveringCause, !restored { return .suppressed(cause: cause) }
        return .due
    }
}

/// How the moment of deciding relates to the occurrence instant T.
public enum Timeliness: Sendable, Hashable {
    /// Decided at T: publish the decision as usual.
    case onTime
    /// T passed (e.g. while the planner was down) but `now − T` is within the grace window
    /// (inclusive): decide it now with `late: true`.
    case late
    /// Older than the grace window: publish `reminder.missed` once; it never fires.
    case missed

    /// A live scheduler wakes a little after T (timer slack, a busy run loop); 1 s absorbs that
    /// jitter while a restart — which takes longer than a second — still counts as late.
    public static let defaultOnTimeToleranceMilliseconds: Int64 = 1000

    /// `now − T < tolerance` (including `now` before T) is on time; up to and including
    /// `graceMinutes` is late; beyond it, missed.
    ///
    /// The tolerance is a wall-clock heuristic for wake-up jitter. A scheduler that knows better
    /// should say so: occurrences its live loop reaches (T after the planner started, or a manual
    /// clock being advanced over T) are on time however long the batch takes — decide those with
    /// `now: T`, and use this with the real `now` for what start-up finds in the past.
    public static func classify(now: Instant, at: Instant, graceMinutes: Int,
                                onTimeToleranceMilliseconds: Int64 = defaultOnTimeToleranceMilliseconds) -> Timeliness {
        let overdue = now.milliseconds(since: at)
        if overdue < onTimeToleranceMilliseconds { return .onTime }
        if overdue <= Int64(graceMinutes) * 60_000 { return .late }
        return .missed
    }
}
