import Foundation

/// The instances of one service a client may ask (PROTOCOL "Cluster": several endpoints in one flag).
/// A request goes to the instance that answered last; one left unanswered goes again to the next in
/// the list, and so does every request after it, so a dead instance costs one timeout, not one per request.
public struct Instances: Sendable, CustomStringConvertible {
    public let endpoints: [String]
    /// The index of the instance the next request goes to.
    public private(set) var current = 0

    public init(_ endpoints: [String]) {
        precondition(!endpoints.isEmpty, "a service has at least one endpoint")
        self.endpoints = endpoints
    }

    public var endpoint: String { endpoints[current] }

    /// All of them as the flag names them, for messages.
    public var description: String { endpoints.joined(separator: ",") }

    /// The tries of a request meant to be tried `tries` times: at least one per instance.
    public func tries(_ tries: Int) -> Int { max(1, tries, endpoints.count) }

    /// The instance at `index` did not answer: move on from it, unless another request already did.
    public mutating func unanswered(at index: Int) {
        if index == current { current = (current + 1) % endpoints.count }
    }
}
