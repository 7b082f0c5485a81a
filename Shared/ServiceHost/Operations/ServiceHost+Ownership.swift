import Dispatch
import LHTSchema
import Storage

// Who does which user's time-driven work (PROTOCOL "Cluster (PostgreSQL)", "Owners"), as operators
// see it: `health.owns` and the metrics `lht_owned_partitions` and `lht_lease_age_seconds`.
extension ServiceHost {
    /// Seconds since the leases were last renewed (`Store.balancePartitions`); nil on a store no
    /// other instance shares.
    public var leaseAgeSeconds: Double? {
        guard store.isShared, let confirmed = store.leaseRenewedAt else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        return Double(now > confirmed ? now - confirmed : 0) / 1e9
    }

    /// `health.owns`, for a service whose time-driven work is shared by partitions.
    var ownership: Ownership? {
        guard sharesWorkByPartitions else { return nil }
        // Tenths of a second: enough to tell a renewal every second from a stalled one.
        return Ownership(partitions: store.ownedPartitions.count, leaseAgeSeconds: leaseAgeSeconds.map { ($0 * 10).rounded() / 10 })
    }

    /// The ownership gauges, twice a second at most: the lease's age grows between scrapes.
    func syncOwnershipMetrics() {
        guard sharesWorkByPartitions else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= ownershipMetricsSynced else { return }
        ownershipMetricsSynced = now + 500_000_000
        metrics.ownership(partitions: store.ownedPartitions.count, leaseAgeSeconds: leaseAgeSeconds)
    }
}
