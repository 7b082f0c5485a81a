import LHTSchema
import Storage

/// A service as its host drives it. The service registers its ops (`handle…`) and its feeds
/// (`UpstreamFeed`) on `host` as it starts; the host serves the ops, ticks the feeds, and calls
/// what follows. A service without timed work, zone rules or shared memory keeps the defaults.
public protocol Service: AnyObject {
    var host: ServiceHost { get }
    /// The `ready …` line; services with extra endpoints add them after the standard two.
    var readyLine: String { get }
    /// Timed work after every turn of the loop, once the host ticked the feeds.
    func tick()
    /// The next instant `tick` is wanted by; the loop sleeps at most until then. nil: no deadline.
    func nextDeadline() -> Instant?
    /// The tzdata version `health` names, for a service whose answers depend on zone rules.
    var tzdataVersion: String? { get }
    /// Runs first in every write transaction (not in a nested one): where the store is shared, the
    /// service brings its memory up to what other instances committed, under the log row's lock.
    func beforeWriting(_ tx: Transaction) throws
}

extension Service {
    public var readyLine: String { host.readyLine() }
    public func tick() {}
    public func nextDeadline() -> Instant? { nil }
    public var tzdataVersion: String? { nil }
    public func beforeWriting(_ tx: Transaction) throws {}

    /// Serves until `shutdown` is requested.
    public func run(until shutdown: ShutdownSignal) {
        host.attach(self)
        host.run(until: shutdown)
    }
}
