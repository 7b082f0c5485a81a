import Foundation
import LHTClient
import LHTSchema
import Logging
import Storage
import ZeroMQ

// Seqs mean something only within one history: the upstream's log identity is checked, adopted
// with `--accept-upstream-reset`, or halts the feed.
extension UpstreamFeed {
    /// Whether `logId` (the upstream's log identity from a page or a heartbeat; nil from a publisher
    /// that does not say) names the history this feed follows. The first one heard is adopted.
    func follows(_ logId: RecordID?) -> Bool {
        guard !halted else { return false }
        guard let logId, let followed = followedLog, logId != followed else {
            if followedLog == nil, let logId { followedLog = logId }  // stored with the next cursor
            return true
        }
        held.removeAll()
        if host.acceptUpstreamReset {
            host.logger.warning("the upstream has a new history: following it from its start",
                                metadata: ["upstream": "\(upstream)", "was": "\(followed)", "now": "\(logId)", "applied": "\(appliedSeq)"])
            do {
                try host.write { tx in
                    // The first instance to follow the new history starts every partition at its start too.
                    if partitionFloors != nil, try host.store.cursor(upstream.rawValue).logId != logId {
                        try tx.sql.execute("UPDATE partition_cursor SET seq = 0 WHERE upstream = ?", [.text(upstream.rawValue)])
                    }
                    try tx.setCursor(upstream.rawValue, 0, logId: logId)
                }
                followedLog = logId
                appliedSeq = 0
                if partitionFloors != nil { partitionFloors = try host.query(storedPartitionCursors) }
                return true
            } catch {
                host.recordError("storing the new upstream history failed", ["upstream": "\(upstream)", "error": "\(error)"])
                return false
            }
        }
        halted = true
        host.count(Self.resetCounter)
        host.recordError("the upstream has a different history: not following it", [
            "upstream": "\(upstream)", "was": "\(followed)", "now": "\(logId)", "applied": "\(appliedSeq)",
            "todo": "restore the upstream's data, or restart once with --accept-upstream-reset to follow the new history",
        ])
        return false
    }
}
