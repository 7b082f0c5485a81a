import Foundation

/// The replies of one turn that tell of stored data. They leave in the order of their requests, since
/// a client may match replies to its pipelined requests by order alone (PROTOCOL has no request ids),
/// and only once every commit before them is on disk and every read among them is answered (reads
/// behind the log are answered after the turn: `Placement.reading`). Loop thread.
final class OrderedReplies {
    /// By request index: nil for a request whose reply is not one of these, or has not come yet.
    private var frames: [Data?]
    private var missing = 0
    private var durable = false
    private let send: (_ index: Int, _ frame: Data) -> Void

    init(count: Int, send: @escaping (_ index: Int, _ frame: Data) -> Void) {
        frames = Array(repeating: nil, count: count)
        self.send = send
    }

    /// A reply that comes later, by `fill`.
    func expect(_ index: Int) { missing += 1 }

    /// A reply: one expected, or one that is here now.
    func fill(_ index: Int, _ frame: Data, expected: Bool = false) {
        guard frames.indices.contains(index), frames[index] == nil else { return }  // answered once
        frames[index] = frame
        if expected { missing -= 1 }
        sendIfComplete()
    }

    /// Every commit before these replies is on disk.
    func becameDurable() {
        durable = true
        sendIfComplete()
    }

    private func sendIfComplete() {
        guard durable, missing == 0 else { return }
        for index in frames.indices { if let frame = frames[index] { send(index, frame) } }
        frames = []
    }
}
