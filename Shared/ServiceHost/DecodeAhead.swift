import Foundation
import LHTSchema

/// The inputs of a batch's requests, decoded in order on a thread of their own while the loop runs
/// the requests before them in the batch's transaction.
///
/// Decoding a request's `data` was a fifth of a `session.log`'s work on the loop, and needs nothing
/// but the frame and the op's decoder (`Operation.decode`), so a second core can do it. The loop
/// waits only for the first input; each later one is decoded before the loop, busy storing the one
/// before it, asks for it. A small batch is decoded on the loop: handing it over costs more than
/// it saves, and a lone request would wait for another thread to wake.
final class DecodeAhead: @unchecked Sendable {
    /// From this many requests on, a batch is decoded ahead.
    static let smallestBatch = 4
    private static let worker = DispatchQueue(label: "decode-ahead", qos: .userInitiated)

    typealias Decoder = @Sendable (_ frame: Data, _ head: RequestHead) throws -> Any

    private let condition = NSCondition()
    // Under `condition`: `inputs[..<ready]` are decoded.
    private var inputs: [Result<Any, Error>?]
    private var ready = 0
    private var loopWaits = false

    /// Starts decoding `requests` in order; nil for a batch too small to hand over.
    init?(_ requests: [(frame: Data, head: RequestHead, decode: Decoder)]) {
        guard requests.count >= Self.smallestBatch else { return nil }
        inputs = Array(repeating: nil, count: requests.count)
        Self.worker.async { [self] in
            for (index, request) in requests.enumerated() {
                let input = Result { try request.decode(request.frame, request.head) }
                condition.withLock {
                    inputs[index] = input
                    ready = index + 1
                    if loopWaits { condition.signal() }
                }
            }
        }
    }

    /// The decoded input of the batch's `index`th request, once it is there.
    func input(_ index: Int) -> Result<Any, Error> {
        condition.withLock {
            while ready <= index {
                loopWaits = true
                condition.wait()
            }
            loopWaits = false
            return inputs[index]!
        }
    }
}
