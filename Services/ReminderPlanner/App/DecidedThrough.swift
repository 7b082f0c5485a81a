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
