import Dispatch
import Foundation
import Synchronization

/// A stop request, set by SIGTERM/SIGINT or by a test, read by the loop between messages.
public final class ShutdownSignal: Sendable {
    private let requested = Atomic<Bool>(false)

    public init() {}

    /// The process's own: what SIGTERM and SIGINT set once `installSignalHandlers` ran, and what
    /// start-up work that may wait long (connecting to a database) checks.
    public static let process = ShutdownSignal()

    public var isRequested: Bool { requested.load(ordering: .acquiring) }

    public func request() { requested.store(true, ordering: .releasing) }

    /// Routes SIGTERM and SIGINT here instead of killing the process, so the loop can finish cleanly.
    public func installSignalHandlers() {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in request() }
            source.resume()
            SignalSources.keep(source)
        }
    }
}

/// Keeps signal sources alive for the life of the process (a released source stops delivering).
private enum SignalSources {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []
    private static let lock = NSLock()

    static func keep(_ source: DispatchSourceSignal) {
        lock.lock()
        defer { lock.unlock() }
        sources.append(source)
    }
}
