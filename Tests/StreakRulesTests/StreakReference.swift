import LHTSchema
import StreakRules

/// The day-by-day walk of SEMANTICS §5 exactly as `Streak.compute` did it before it learnt to skip
/// runs of unlogged days: one step per calendar day from the first logged day to the end day. Kept
/// here, independent of `StreakRules`' own state machine, as the reference the faster walk must match.
enum ReferenceStreak {
    static func compute(user: UserID, levels: [LocalDay: NoAlcLevel], today: LocalDay, policy: StreakPolicy) -> StreakState {
        let days = levels.keys.filter { $0 <= today }
        guard let first = days.min(), let last = days.max() else {
            return Streak.nothingLogged(user: user, today: today, policy: policy)
        }
        let todayLogged = last == today
        let end = todayLogged ? today.ordinal : today.ordinal - 1
        var state = State(policy: policy)
        for ordinal in first.ordinal...end { state.step(levels[LocalDay(ordinal: ordinal)]) }
        return StreakState(userId: user, asOf: today, policy: policy.rawValue, streakDays: state.streak,
                           rewardsEarned: state.earned, rewardsUsed: state.used, rewardsLost: state.lost,
                           rewardsAvailable: state.jokers, lastLoggedDay: last, todayLogged: todayLogged)
    }

    struct State {
        let policy: StreakPolicy
        var streak = 0, jokers = 0, earned = 0, used = 0, lost = 0

        mutating func step(_ level: NoAlcLevel?) {
            switch level {
            case .steady:
                streak += 1
                if streak % 7 == 0 { milestone() }
            case .wild where policy == .seed:
                streak = 0
                if jokers > 0 { jokers -= 1; lost += 1 }
            case .easy, .wild, nil:
                if (streak + 1) % 7 == 0 { milestone() }
                if streak > 0, jokers > 0 {
                    jokers -= 1; used += 1; streak += 1
                } else {
                    streak = 0
                    if policy == .classic { jokers = 0; earned = 0; used = 0 }
                }
            }
        }

        mutating func milestone() {
            if jokers < 3 { jokers += 1; earned += 1 }
        }
    }
}
