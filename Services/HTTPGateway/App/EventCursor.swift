import Foundation
import LHTSchema

/// Where an event stream stands: the newest seq it has passed of each publisher, so it can resume
/// from the publishers' own logs after any reconnect or gateway restart. Written as four numbers,
/// `<session-logger>.<reminder-planner>.<notifier>.<noalc-streak>` (`0.12.7.0`).
public struct EventCursor: Sendable, Equatable, CustomStringConvertible {
    public private(set) var seqs: [ServiceName: Int64]

    public init(seqs: [ServiceName: Int64] = [:]) {
        self.seqs = Dictionary(uniqueKeysWithValues: ServiceName.allCases.map { ($0, seqs[$0] ?? 0) })
    }

    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == ServiceName.allCases.count else { return nil }
        var seqs: [ServiceName: Int64] = [:]
        for (service, part) in zip(ServiceName.allCases, parts) {
            guard let seq = Int64(part), seq >= 0, part.allSatisfy(\.isASCII) else { return nil }
            seqs[service] = seq
        }
        self.seqs = seqs
    }

    public subscript(service: ServiceName) -> Int64 {
        get { seqs[service] ?? 0 }
        set { seqs[service] = newValue }
    }

    public var description: String { ServiceName.allCases.map { String(self[$0]) }.joined(separator: ".") }
}

/// `?types=` of the event stream: event types of PROTOCOL's table, default `notify`.
public struct EventSelection: Sendable, Equatable {
    public let types: Set<String>

    public init(types text: String?) throws(EventSelectionError) {
        let names = (text ?? "notify").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let known = Set(Events.all.map(\.name))
        if let unknown = names.first(where: { !known.contains($0) }) { throw EventSelectionError(type: unknown) }
        guard !names.isEmpty else { throw EventSelectionError(type: "") }
        types = Set(names)
    }

    /// The publishers of the selected types, in the cursor's order.
    public var publishers: [ServiceName] {
        ServiceName.allCases.filter { service in Events.all.contains { $0.publisher == service && types.contains($0.name) } }
    }

    /// Whether an event of `type` with `topic` is the stream's: its type selected, its topic naming `user`.
    public func wants(type: String, topic: String, user: UserID) -> Bool {
        types.contains(type) && topic.hasPrefix("\(type).\(user).")
    }
}

public struct EventSelectionError: Error, CustomStringConvertible {
    public let type: String
    public var description: String {
        "types: \"\(type)\" is not an event type (\(Events.all.map(\.name).joined(separator: ", ")))"
    }
}
