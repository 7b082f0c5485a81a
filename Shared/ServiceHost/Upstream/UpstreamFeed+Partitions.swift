import Foundation
import LHTClient
import LHTSchema
import Logging
import Storage
import ZeroMQ

// A feed partitioned by user on a shared store: each instance applies its own partitions in full.
extension UpstreamFeed {
    /// Whether this instance applies `seq` in full for `user`: always, unless the feed is
    /// partitioned; then only in a partition it owns and past what is applied there.
    public func isMine(_ user: UserID, seq: Int64) -> Bool {
        guard let partitionFloors else { return true }
        let partition = Ownership.partition(of: user)
        return host.store.ownedPartitions.contains(partition) && seq > partitionFloors[partition]
    }

    /// Each partition's stored seq, made where missing from the feed's cursor (what every
    /// instance applied before the feed was partitioned).
    func startPartitionCursors() throws -> [Int64] {
        try host.write { tx in
            let rows = (0..<Ownership.partitionCount).map { "(?, \($0), ?)" }.joined(separator: ", ")
            try tx.sql.execute("INSERT INTO partition_cursor (upstream, partition_index, seq) VALUES \(rows) ON CONFLICT DO NOTHING",
                               Array(repeating: [.text(upstream.rawValue), .integer(appliedSeq)], count: Ownership.partitionCount).flatMap { $0 })
            return try storedPartitionCursors(tx.sql)
        }
    }

    /// Each partition's stored seq.
    func storedPartitionCursors(_ sql: StoreConnection) throws -> [Int64] {
        var floors = Array(repeating: appliedSeq, count: Ownership.partitionCount)
        try sql.forEachRow("SELECT partition_index, seq FROM partition_cursor WHERE upstream = ?", [.text(upstream.rawValue)]) { row in
            if let partition = row.integer(0), let seq = row.integer(1), floors.indices.contains(Int(partition)) { floors[Int(partition)] = seq }
        }
        return floors
    }

    /// Takes this instance's share of the partitions and lets go of the rest; for those it newly
    /// holds, goes back to where their last owner was, and the feed's catch-up applies from there.
    func balancePartitionsIfDue() {
        guard partitionFloors != nil, balance.isDue else { return }
        balance.balancing()
        do {
            let taken = try host.store.balancePartitions()
            guard !taken.isEmpty else { return }
            let stored = try host.query(storedPartitionCursors)
            for partition in taken { partitionFloors![partition] = stored[partition] }
            let from = taken.map { stored[$0] }.min()!
            host.logger.notice("took over partitions", metadata: [
                "upstream": "\(upstream)", "taken": "\(taken.count)", "owns": "\(host.store.ownedPartitions.count)", "from": "\(from)"])
            do {
                try onTakeOver?(taken)
            } catch {
                host.recordError("reading the partitions taken over failed", ["upstream": "\(upstream)", "error": "\(error)"])
            }
            // A catch-up round in flight finds its pages past the gap this leaves, and the next round fills it.
            if from < appliedSeq {
                appliedSeq = from
                held.removeAll()
                if !isCatchingUp { catchUpInBackground() }
            }
        } catch {
            host.recordError("balancing the partitions failed; will retry", ["upstream": "\(upstream)", "error": "\(error)"])
        }
    }
}
