import LHTSchema

/// Where "now" comes from. The planner can run on a manual clock; everything else reads the system.
public protocol TimeSource: AnyObject {
    func now() -> Instant
}

public final class SystemTime: TimeSource {
    public init() {}
    public func now() -> Instant { Instant.now() }
}
