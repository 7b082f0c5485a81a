import Foundation

/// Items from one producer thread to one consumer, a few at most waiting, so memory stays small
/// whichever side is faster: the planner's rows read while its schedule fills, an upstream's pages
/// fetched and decoded while the feed applies the one before.
public final class HandOff<Item: Sendable>: @unchecked Sendable {
    private let waitingLimit: Int
    private let condition = NSCondition()
    // Under `condition`.
    private var waiting: [Item] = []
    private var end: Result<Void, Error>?
    private var cancelled = false

    public init(waitingLimit: Int) { self.waitingLimit = waitingLimit }

    /// Blocks while the consumer is `waitingLimit` items behind. False once the consumer cancelled:
    /// the producer should stop.
    @discardableResult
    public func put(_ item: Item) -> Bool {
        condition.withLock {
            while waiting.count >= waitingLimit && !cancelled { condition.wait() }
            guard !cancelled else { return false }
            waiting.append(item)
            condition.broadcast()
            return true
        }
    }

    /// The producer's last word: nothing more comes, and why.
    public func finish(_ result: Result<Void, Error>) {
        condition.withLock {
            end = result
            condition.broadcast()
        }
    }

    /// The next item; nil once the producer finished and everything was taken; its error if it failed.
    public func take() throws -> Item? {
        try condition.withLock {
            while waiting.isEmpty && end == nil { condition.wait() }
            if !waiting.isEmpty {
                condition.broadcast()
                return waiting.removeFirst()
            }
            try end?.get()
            return nil
        }
    }

    /// The consumer wants nothing more: a blocked or later `put` returns false.
    public func cancel() {
        condition.withLock {
            cancelled = true
            waiting.removeAll()
            condition.broadcast()
        }
    }
}
