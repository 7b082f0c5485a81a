import Foundation
import LHTSchema
import Storage
import ZeroMQ

// Several planner instances over one PostgreSQL (PROTOCOL "Cluster (PostgreSQL)", "Owners"): each
// holds leases on a share of the 64 partitions users hash into and decides only for those.

extension WireClient {
    /// `health.owns.partitions` of the instance this client talks to: how many of the 64 partitions
    /// it decides for now.
    func ownedPartitions() throws -> Int {
        let owns = try ok("health")["owns"]
        guard let partitions = owns?["partitions"]?.intValue, owns?["of"]?.intValue == Int64(Ownership.partitionCount) else {
            throw HarnessError("health.owns is \(String(describing: owns))")
        }
        return Int(partitions)
    }
}

/// Waits until the instance `client` talks to owns all 64 partitions (another was stopped, or cut
/// off, at `since`); returns how long after `since` that was, and the slowest `health` meanwhile.
func takeover(by client: WireClient, since: Date, interval: TimeInterval) throws -> (after: TimeInterval, slowestHealth: TimeInterval) {
    var slowestHealth = 0.0
    try waitUntil(timeout: 20, interval: interval, "the other planner owning all 64 partitions") {
        let asked = Date()
        let owned = try client.ownedPartitions()
        slowestHealth = max(slowestHealth, Date().timeIntervalSince(asked))
        return owned == Ownership.partitionCount
    }
    return (Date().timeIntervalSince(since), slowestHealth)
}

/// Sends SIGCONT to a SIGSTOPped planner and waits until it answers again and has rejoined `other`
/// with a share of its own; returns a client for it (its first socket may have given up meanwhile).
func resume(_ paused: ServiceProcess, rejoining other: WireClient, context: Context) throws -> WireClient {
    paused.process.signal(SIGCONT)
    var client = try WireClient(paused.api, context: context)
    try waitUntil(timeout: 30, interval: 0.5, "the resumed planner answering") {
        if (try? client.ok("health")) != nil { return true }
        client = try WireClient(paused.api, context: context)
        return false
    }
    try settledShares([client, other], timeout: 30)
    return client
}

/// Each planner instance's share once the shares add up: every instance holds some, they add up to
/// 64, and two rounds of `health` in a row agree (a share moving between one instance's answer and
/// the next one's could otherwise be counted twice or not at all). The instances rebalance every
/// second; throws unless that holds within `timeout`.
@discardableResult
func settledShares(_ planners: [WireClient], timeout: TimeInterval) throws -> [Int] {
    var last: [Int] = []
    try waitUntil(timeout: timeout, interval: 0.2, "\(planners.count) planner instances sharing the 64 partitions (last: \(last))") {
        let shares = try planners.map { try $0.ownedPartitions() }
        defer { last = shares }
        return shares == last && shares.reduce(0, +) == Ownership.partitionCount && shares.allSatisfy { $0 > 0 }
    }
    return last
}

/// A user id for each of the 64 partitions (`Ownership.partition(of:)`, the same in every process),
/// `prefix` and a number: whatever share an instance holds, some of these users are in it.
func usersOnePerPartition(_ prefix: String) -> [String] {
    var users = [String?](repeating: nil, count: Ownership.partitionCount)
    var next = 0
    while users.contains(nil) {
        let user = "\(prefix)\(next)"
        next += 1
        let partition = Ownership.partition(of: UserID(user)!)
        if users[partition] == nil { users[partition] = user }
    }
    return users.map { $0! }
}
