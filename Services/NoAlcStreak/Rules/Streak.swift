import LHTSchema

/// Which reading of the joker rules to apply (SEMANTICS §5).
///
/// Two policies exist because seed `002_…`'s written rules and the shipped app disagree (SEMANTICS §5), and users
/// who compare numbers with the app need the app's arithmetic.
public enum StreakPolicy: String, CaseIterable, Sendable, Codable {
    /// The default: wild breaks the streak even with jokers on hand and costs one joker as a
    /// penalty; jokers survive a broken streak.
    case seed
    /// The shipped app: wild is healed like easy, and every break wipes jokers and counters.
    case classic
}

extension StreakState {
    /// The last day the walk counted: `asOf` if logged, else the day before; nil when nothing is logged.
    public var endDay: LocalDay? {
        todayLogged ? asOf : lastLoggedDay.map { _ in asOf.adding(days: -1) }
    }
}

/// The streak and joker calculation of SEMANTICS §5.
public enum Streak {
    /// Jokers on hand never exceed this; a milestone reached at the cap is lost.
    public static let maxJokers = 3
    /// A milestone falls on every multiple of this many streak days.
    public static let milestoneDays = 7

    /// `user`'s streak as of `today` (the state's `asOf`): walks the history forward from the first
    /// logged day to the end day (today if today has an entry, else yesterday). Entries after
    /// `today` are ignored, which is how `asOf` works.
    ///
    /// Forward, because jokers must be earned before a later easy day can spend them (the seed's
    /// backward walk failed exactly there). The cost grows with the number of logged days, not
    /// with the calendar span: a run of unlogged days is walked only until it stops changing the
    /// state (`Walk.skip`), a handful of days at most.
    public static func compute(user: UserID, levels: [LocalDay: NoAlcLevel], today: LocalDay, policy: StreakPolicy) -> StreakState {
        let sorted = levels.filter { $0.key <= today }.sorted { $0.key < $1.key }.map { (day: $0.key, level: $0.value) }
        return compute(user: user, sortedLevels: sorted, today: today, policy: policy)
    }

    /// The same calculation over entries sorted by day ascending, as `noalc.list` returns them;
    /// no hashing at all. Where a day repeats, the later element wins (the latest entry wins).
    /// Input that is not sorted is still handled correctly, through the dictionary form.
    public static func compute(
        user: UserID, sortedLevels entries: [(day: LocalDay, level: NoAlcLevel)], today: LocalDay, policy: StreakPolicy
    ) -> StreakState {
        var progress = StreakProgress(policy: policy)
        for index in entries.indices {
            if index > 0, entries[index].day < entries[index - 1].day {
                return compute(user: user, levels: latestPerDay(entries), today: today, policy: policy)
            }
            if entries[index].day <= today { progress.record(entries[index].level, on: entries[index].day) }
        }
        // Every day walked is on or before `today`, so the progress answers for it.
        return progress.state(user: user, asOf: today) ?? nothingLogged(user: user, today: today, policy: policy)
    }

    /// The state of a user with no history up to `today`.
    public static func nothingLogged(user: UserID, today: LocalDay, policy: StreakPolicy) -> StreakState {
        StreakState(userId: user, asOf: today, policy: policy.rawValue, streakDays: 0, rewardsEarned: 0, rewardsUsed: 0,
                    rewardsLost: 0, rewardsAvailable: 0, lastLoggedDay: nil, todayLogged: false)
    }

    private static func latestPerDay(_ entries: [(day: LocalDay, level: NoAlcLevel)]) -> [LocalDay: NoAlcLevel] {
        var levels = [LocalDay: NoAlcLevel](minimumCapacity: entries.count)
        for entry in entries { levels[entry.day] = entry.level }
        return levels
    }
}

/// The walk through a user's entries up to their last logged day, kept between entries: an entry
/// on or after that day extends it without walking the history again, and the state as of any day
/// from then on follows from it, so a service applying entries in day order or answering for
/// "today" pays per entry, not per logged day.
public struct StreakProgress: Sendable {
    public let policy: StreakPolicy
    /// The last logged day walked; nil before the first entry.
    public private(set) var lastDay: LocalDay?
    /// The walk up to the day before `lastDay` (its unlogged days skipped): a second entry for
    /// `lastDay` replaces the first by stepping again from here.
    private var beforeLastDay: Walk
    private var walk: Walk

    public init(policy: StreakPolicy) {
        self.policy = policy
        beforeLastDay = Walk(policy: policy)
        walk = beforeLastDay
    }

    /// The progress through entries sorted by day ascending, each day once.
    public init(policy: StreakPolicy, sortedLevels entries: [(day: LocalDay, level: NoAlcLevel)]) {
        self.init(policy: policy)
        for entry in entries { record(entry.level, on: entry.day) }
    }

    /// Walks `level` on `day`; a day equal to `lastDay` replaces its level (the latest entry wins).
    /// False, and nothing changes, for a day before `lastDay`: the walk cannot be undone, so the
    /// caller rebuilds the progress from the sorted entries.
    @discardableResult
    public mutating func record(_ level: NoAlcLevel, on day: LocalDay) -> Bool {
        if let lastDay {
            guard day >= lastDay else { return false }
            if day == lastDay {
                walk = beforeLastDay
            } else {
                walk.skip(unlogged: day.ordinal - lastDay.ordinal - 1)
                beforeLastDay = walk
            }
        }
        walk.step(level)
        lastDay = day
        return true
    }

    /// The state as of `today`, as `Streak.compute` gives it; nil when `today` is before `lastDay`
    /// (later entries would have to be left out: use `Streak.compute`).
    public func state(user: UserID, asOf today: LocalDay) -> StreakState? {
        guard let lastDay else { return Streak.nothingLogged(user: user, today: today, policy: policy) }
        guard today >= lastDay else { return nil }
        let todayLogged = today == lastDay
        // The unlogged days after the last entry, up to the end day (none when today is logged).
        var end = walk
        if !todayLogged { end.skip(unlogged: today.ordinal - 1 - lastDay.ordinal) }
        return end.state(user: user, today: today, lastLogged: lastDay, todayLogged: todayLogged)
    }
}

/// The day-by-day state machine, kept apart so both input forms share one set of rules.
struct Walk: Equatable {
    let policy: StreakPolicy
    var streak = 0
    var jokers = 0
    var earned = 0
    var used = 0
    var lost = 0

    init(policy: StreakPolicy) { self.policy = policy }

    /// One day; `nil` is a past day with no entry, which counts like easy.
    mutating func step(_ level: NoAlcLevel?) {
        switch level {
        case .steady:
            streak += 1
            if streak % Streak.milestoneDays == 0 { milestone() }
        case .wild where policy == .seed:
            // Breaks regardless of jokers, and costs one if there is one; no milestone.
            streak = 0
            if jokers > 0 {
                jokers -= 1
                lost += 1
            }
        case .easy, .wild, nil:
            // Earn before consume: a healed day that completes a week pays for itself.
            if (streak + 1) % Streak.milestoneDays == 0 { milestone() }
            if streak > 0, jokers > 0 {
                jokers -= 1
                used += 1
                streak += 1
            } else {
                // Nothing to heal, or nothing to heal with: no joker is spent or taken.
                breakStreak()
            }
        }
    }

    /// `days` past days in a row with no entry, each counting like easy (`step(nil)`), in O(jokers)
    /// steps instead of `days`: while the streak is above 0 each such day spends a joker (a milestone
    /// gives at most one back per 7 days) or breaks the streak; once a day leaves the state as it was,
    /// so does every further one (the step is a function of the state alone), and the rest is skipped.
    /// At most about `maxJokers + 3` days are walked, whatever `days` is.
    mutating func skip(unlogged days: Int) {
        var remaining = days
        while remaining > 0 {
            let before = self
            step(nil)
            remaining -= 1
            if self == before { return }
        }
    }

    private mutating func milestone() {
        if jokers < Streak.maxJokers {
            jokers += 1
            earned += 1
        }
    }

    private mutating func breakStreak() {
        streak = 0
        if policy == .classic {
            jokers = 0
            earned = 0
            used = 0
        }
    }

    func state(user: UserID, today: LocalDay, lastLogged: LocalDay, todayLogged: Bool) -> StreakState {
        StreakState(
            userId: user, asOf: today, policy: policy.rawValue, streakDays: streak, rewardsEarned: earned, rewardsUsed: used,
            rewardsLost: lost, rewardsAvailable: jokers, lastLoggedDay: lastLogged, todayLogged: todayLogged)
    }
}
