import Foundation
import LHTSchema

/// The inputs of a batch's requests, decoded in order on a thread of their own while the loop runs
/// the requests before them in the batch's transaction.
///
/// Decoding a request's `data` is a good part of a write's work on the loop, and needs nothing but
/// the frame and the op's decoder (`Operation.decode`), so a second core can do it. The loop
/// decodes the first request itself, so it never waits for the other thread to wake; each later
/// one is decoded before the loop, busy storing the one before it, asks for it. A small batch is
/// all decoded on the loop: handing it over costs more than it saves.
final class DecodeAhead: @unchecked Sendable {
    /// From this many requests on, a batch is decoded ahead.
    static let smallestBatch = 4

    private let condition = NSCondition()
    // Under `condition`: `inputs[..<ready]` are decoded.
    private var inputs: [Result<any DecodedRequest, Error>?]
    private var ready = 0
    private var loopWaits = false

    /// Starts decoding `requests` after the first, in order; nil for a batch too small to hand over.
    init?(_ requests: [(frame: Data, head: RequestHead, operation: any Operation)]) {
        guard requests.count >= Self.smallestBatch else { return nil }
        inputs = Array(repeating: nil, count: requests.count)
        ready = 1
        // A global queue, not one of our own: two hosts in a process must not wait on each other's batches.
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            for (index, request) in requests.enumerated().dropFirst() {
                let input = Result { try request.operation.decode(request.frame, request.head) }
                condition.withLock {
                    inputs[index] = input
                    ready = index + 1
                    if loopWaits { condition.signal() }
                }
            }
        }
    }

    /// The decoded input of the batch's `index`th request, once it is there; nil for the first,
    /// which the loop decodes.
    func input(_ index: Int) -> Result<any DecodedRequest, Error>? {
        guard index > 0 else { return nil }
        return condition.withLock {
            while ready <= index {
                loopWaits = true
                condition.wait()
            }
            loopWaits = false
            return inputs[index]
        }
    }
}
