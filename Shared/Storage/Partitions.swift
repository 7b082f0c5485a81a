import Dispatch
import LHTSchema

/// Some of the `Ownership.partitionCount` (64) partitions users hash into, one bit each.
public struct PartitionSet: Hashable, Sendable, Sequence {
    public private(set) var bits: UInt64

    public static let none = PartitionSet(bits: 0)
    public static let all = PartitionSet(bits: .max)

    public init(bits: UInt64) { self.bits = bits }

    public init(_ partitions: some Sequence<Int>) {
        bits = partitions.reduce(0) { $0 | 1 << UInt64($1) }
    }

    public var count: Int { bits.nonzeroBitCount }
    public var isEmpty: Bool { bits == 0 }
    public func contains(_ partition: Int) -> Bool { bits >> UInt64(partition) & 1 == 1 }
    public func union(_ other: PartitionSet) -> PartitionSet { PartitionSet(bits: bits | other.bits) }
    public func subtracting(_ other: PartitionSet) -> PartitionSet { PartitionSet(bits: bits & ~other.bits) }
    /// The partitions as SQL integers, comma-separated (`IN (…)`, `ARRAY[…]`).
    public var sqlList: String { map(String.init).joined(separator: ",") }

    public func makeIterator() -> some IteratorProtocol<Int> {
        var rest = bits
        return AnyIterator {
            guard rest != 0 else { return nil }
            let partition = rest.trailingZeroBitCount
            rest &= rest - 1
            return partition
        }
    }

    /// Whether `user`'s partition is among these.
    public func contains(_ user: UserID) -> Bool { self == .all || contains(Ownership.partition(of: user)) }

    /// `n` members' shares, by rank: member `rank` takes every `n`-th partition from `rank` on.
    public static func share(rank: Int, of members: Int) -> PartitionSet {
        PartitionSet(stride(from: rank, to: Ownership.partitionCount, by: Swift.max(members, 1)))
    }
}

/// When an instance balances its partitions next (`Store.balancePartitions`): every second. A dead
/// instance's partitions are free at once, a cut-off one's within about 11 s (keepalives), a paused
/// or stuck one's once the server ends its idle session (`PostgresStore.idleSessionTimeout`): a
/// second more keeps takeover within 15 s. The balance is also what keeps a healthy session from
/// ever being idle that long.
public struct BalanceCadence {
    public static let intervalNanoseconds: UInt64 = 1_000_000_000
    private var next: UInt64 = 0

    public init() {}

    public var isDue: Bool { DispatchTime.now().uptimeNanoseconds >= next }

    /// Balancing now: the next is due a second on.
    public mutating func balancing() { next = DispatchTime.now().uptimeNanoseconds + Self.intervalNanoseconds }
}

extension Ownership {
    /// The partition a user's time-driven work belongs to: FNV-1a over the id, the same in every
    /// process and release (Swift's own hashing is seeded per process).
    public static func partition(of user: UserID) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in user.rawValue.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(partitionCount))
    }
}
