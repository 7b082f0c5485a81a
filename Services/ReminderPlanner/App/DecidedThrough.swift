import LHTSchema
import Storage

/// How far each partition's occurrences are decided: every one at or before its instant is decided
/// (or never existed). For a partition this instance owns it is what the store says; for another,
/// how far this instance's own clock went, which the partition's owner keeps pace with.
struct DecidedThrough {
    private var instants: [Instant]
    /// Every partition's instant, while they are all the same (always, where one instance owns
    /// them all): spares a user's partition being hashed for every lookup.
    private var uniform: Instant?

    init(_ instant: Instant) {
        instants = Array(repeating: instant, count: Ownership.partitionCount)
        uniform = instant
    }

    subscript(partition: Int) -> Instant {
        get { instants[partition] }
        set {
            instants[partition] = newValue
            uniform = instants.allSatisfy { $0 == newValue } ? newValue : nil
        }
    }

    subscript(user: UserID) -> Instant { uniform ?? instants[Ownership.partition(of: user)] }

    var oldest: Instant { uniform ?? instants.min()! }

    /// Moves every partition to `instant` at least.
    mutating func advance(to instant: Instant) {
        if let uniform, uniform >= instant { return }
        for index in instants.indices where instants[index] < instant { instants[index] = instant }
        uniform = instants.allSatisfy { $0 == instants[0] } ? instants[0] : nil
    }

    /// The partitions in `partitions`, grouped by their instant: what storing them takes.
    func grouped(_ partitions: PartitionSet) -> [Instant: PartitionSet] {
        if partitions.isEmpty { return [:] }
        if let uniform { return [uniform: partitions] }
        return Dictionary(grouping: partitions) { instants[$0] }.mapValues { PartitionSet($0) }
    }
}

/// The one instant that may be decided only in part, where decisions are applied behind the log
/// (SQLite: `Transaction.projectionLags`), so that deciding need not read them back.
///
/// Occurrences are decided in time order, so every one before the last instant decided is decided,
/// and none after it; a clock step that stops within an instant (`decideStep`) leaves that instant
/// partly decided. A reminder is scheduled again from just after `decidedThrough` (`firstPending`),
/// which is at most this instant, so only here can an occurrence come up a second time. What this
/// process decided here it knows; at its start, what an earlier one decided here only the stored
/// decisions know.
struct PartlyDecidedInstant {
    private var at: Instant
    private var decided: Set<OccurrenceKey> = []
    /// An earlier process may have decided occurrences at `at`.
    private var earlierProcess: Bool

    /// At a start: the instant just after everything decided.
    init(after decidedThrough: Instant) {
        at = decidedThrough.adding(milliseconds: 1)
        earlierProcess = true
    }

    /// Whether `key` was decided already; nil where only the stored decisions tell.
    func isDecided(_ key: OccurrenceKey) -> Bool? {
        guard key.at == at else { return false }
        if decided.contains(key) { return true }
        return earlierProcess ? nil : false
    }

    mutating func record(_ key: OccurrenceKey) {
        if key.at > at {
            at = key.at
            decided.removeAll(keepingCapacity: true)
            earlierProcess = false
        }
        if key.at == at { decided.insert(key) }
    }
}
