import Dispatch
import Storage

// Partition leases (PROTOCOL "Owners", "Failover").
extension PostgresStore {
    /// Leases are session advisory locks on the store's one connection, so whatever this instance
    /// commits comes from a session that holds them: a cut-off instance's session ends (about 11 s,
    /// keepalives) and a paused or stuck one's (`idleSessionTimeout`), and its leases with it,
    /// before another instance can take them (fencing). Each instance holds a membership lock too;
    /// the members, in key order, take the shares their ranks give, and each lets go of what is no
    /// longer its share before another takes it. Each balance renews the leases (`leaseRenewedAt`).
    public func balancePartitions() throws -> PartitionSet {
        guard partitioned else { return .none }
        return try query { sql in
            let member = try self.member ?? join(sql)
            let members = try sql.rows("""
                SELECT objid::bigint FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = \(leaseKeys.members)::oid
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                ORDER BY objid
                """, []) { $0.integer(0) }
            guard let rank = members.firstIndex(of: member) else { throw StoreUnavailable(reason: "this instance's membership lock is gone") }
            leaseRenewedAt = DispatchTime.now().uptimeNanoseconds
            let share = PartitionSet.share(rank: rank, of: members.count)
            let leaving = ownedPartitions.subtracting(share)
            if !leaving.isEmpty {
                _ = try sql.execute("SELECT pg_advisory_unlock(\(leaseKeys.partitions), p) FROM unnest(\(Self.array(leaving))) p", [])
                ownedPartitions = ownedPartitions.subtracting(leaving)
            }
            let wanted = share.subtracting(ownedPartitions)
            guard !wanted.isEmpty else { return .none }
            let taken = PartitionSet(try sql.rows("""
                SELECT p FROM unnest(\(Self.array(wanted))) p WHERE pg_try_advisory_lock(\(leaseKeys.partitions), p)
                """, []) { $0.integer(0).map(Int.init) })
            ownedPartitions = ownedPartitions.union(taken)
            return taken
        }
    }

    /// Takes a membership lock under a key no other member holds.
    private func join(_ sql: StoreConnection) throws -> Int64 {
        while true {
            let key = Int64.random(in: 1...Int64(Int32.max))
            if try sql.first("SELECT pg_try_advisory_lock(\(leaseKeys.members), \(key)::int)", [], { $0.text(0) }) == "t" {
                member = key
                return key
            }
        }
    }

    /// The session ended, and its locks with it.
    func forgetLeases() {
        member = nil
        if !ownedPartitions.isEmpty { logger.warning("the partition leases went with the connection", metadata: ["partitions": "\(ownedPartitions.count)"]) }
        ownedPartitions = .none
    }

    private static func array(_ partitions: PartitionSet) -> String {
        "ARRAY[\(partitions.sqlList)]::int[]"
    }
}

/// The advisory-lock keys of a service's leases: one key space for its members, one for its
/// partitions (the second key is the member's or the partition's number). Both are 31-bit, so
/// `pg_locks` shows them as they are.
struct LeaseKeys {
    let members: Int64
    let partitions: Int64

    init(service: String) {
        func key(_ name: String) -> Int64 {
            var hash: UInt32 = 0x811c_9dc5
            for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
            return Int64(hash & 0x7fff_ffff)
        }
        members = key("lht.members." + service)
        partitions = key("lht.partitions." + service)
    }
}
