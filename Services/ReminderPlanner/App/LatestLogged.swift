import LHTSchema

/// The latest end of a user's sessions of each session activity, as far as the planner stored its
/// copies. The deciding loop asks it before the coverage query: when every session of the
/// reminder's activity ended before the occurrence's window opened, nothing stored can cover it,
/// and the query is not run. Most decisions are of occurrences nothing covers (that is why they
/// fire), so this spares most of them the query (docs/decisions/0019-latest-session-end-bound.md).
///
/// A bound, only ever raised: an insert that rolls back, or a session an earlier history replaced
/// with one that ended earlier, leaves it above what is stored, which costs a query and nothing
/// else. So "no session ended after it" stays true as long as every stored session passes here:
/// the start reads it from `latest_session_end` (kept with the copies, one row per user and
/// activity, so the start reads a row per user, not the history), and each session the planner
/// follows raises it before coverage is asked. It holds while this process alone writes the copies
/// (SQLite); instances sharing PostgreSQL each store what they receive, so there it is not used
/// (`ReminderPlanner.latestLoggedIsKnown`).
struct LatestLogged: Sendable, Equatable {
    private var mindfulnessEnd = Int64.min, workoutEnd = Int64.min

    /// Whether a session of `activity` ending at or after `earliest` (ms) may be stored.
    func maySessionEnd(_ activity: Activity, atOrAfter earliest: Int64) -> Bool {
        switch activity {
        case .mindfulness: mindfulnessEnd >= earliest
        case .workout: workoutEnd >= earliest
        // NoAlc entries are asked about by day, in the days' own key: nothing is known of them here.
        case .noalc: true
        }
    }

    mutating func logged(sessionOf activity: Activity, endingAt end: Int64) {
        switch activity {
        case .mindfulness: mindfulnessEnd = max(mindfulnessEnd, end)
        case .workout: workoutEnd = max(workoutEnd, end)
        case .noalc: break
        }
    }
}
