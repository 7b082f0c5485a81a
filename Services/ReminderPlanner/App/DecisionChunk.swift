import LHTSchema
import ReminderPlanning
import Storage

/// An occurrence decided in a step, before its event is appended: that follows once the decision
/// is known to be the occurrence's first.
struct TakenDecision {
    let reminder: Reminder
    let planned: PlannedOccurrence
    let user: UserSettings
    let status: OccurrenceStatus
    let cause: RecordID?
    /// Decided after its instant, within the grace window.
    let late: Bool
}

/// A step's decisions whose rows went out queued (PostgreSQL, where the row says whether a decision
/// is the first), in pop order. They are read back together, one round trip for the chunk
/// (docs/decisions/0029-postgresql-rows-and-decisions-by-the-many.md).
final class DecisionChunk {
    /// How many decisions' rows go out together.
    static let capacity = 16
    /// Each queued decision with what its row answered (false until read back).
    private var queued: [(decision: TakenDecision, isFirst: Bool)] = []

    var isFull: Bool { queued.count >= Self.capacity }

    /// Queues `decision`'s row (`PlannerStore.decideOnce`); its answer is read by `firstDecisions`.
    /// The answer holds the chunk: a rollback reads back what is queued, after the step let go of it.
    func queue(_ decision: TakenDecision, _ sql: StoreConnection) throws {
        let index = queued.count
        queued.append((decision, false))
        try PlannerStore.decideOnce(decision.reminder.id, decision.planned, status: decision.status, cause: decision.cause,
                                    sql) { self.queued[index].isFirst = $0 }
    }

    /// Reads the queued rows back and returns, in pop order, the decisions that were the first;
    /// the chunk is empty again.
    func firstDecisions(_ sql: StoreConnection) throws -> [TakenDecision] {
        guard !queued.isEmpty else { return [] }
        try sql.sendWaiting()
        let first = queued.filter(\.isFirst).map(\.decision)
        queued.removeAll(keepingCapacity: true)
        return first
    }
}

/// Decisions taken in one transaction, by status: counted in the metrics once it commits, one
/// update per status rather than one per decision. In fields, not a dictionary, which hashed the
/// status's raw `String` for every decision.
struct DecisionTally {
    private var fired = 0, suppressed = 0, skipped = 0, missed = 0
    var decided: Int { fired + suppressed + skipped + missed }
    var byStatus: [(status: OccurrenceStatus, count: Int)] {
        [(.fired, fired), (.suppressed, suppressed), (.skipped, skipped), (.missed, missed)].filter { $0.count > 0 }
    }

    mutating func add(_ status: OccurrenceStatus) {
        switch status {
        case .fired: fired += 1
        case .suppressed: suppressed += 1
        case .skipped: skipped += 1
        case .missed: missed += 1
        case .scheduled, .cancelled: assertionFailure("\(status) is not a decision")
        }
    }
}
