import Foundation
import LHTSchema
import ZeroMQ

/// One request as the loop read it.
public struct IncomingRequest {
    /// The request frame; empty for one over `ServiceHost.largestRequest`, which is never copied.
    public let frame: Data
    /// The frame's size as it arrived.
    public let size: Int
    public let caller: Caller
    /// Its `v` and `op`, read once as it arrived: the loop needs the op before the request runs
    /// (`ServiceHost.writes`), and again to run it.
    public let head: Result<RequestHead, WireError>

    public init(frame: Data, caller: Caller = .local) {
        self.frame = frame
        size = frame.count
        head = Result { () throws(WireError) in try RequestHead(frame: frame) }
        // `as` (PROTOCOL "Acting for a user"): the rules then apply to the user it names.
        self.caller = caller.acting(as: try? head.get().actingFor)
    }

    /// A frame too large to read: only its size is kept, and its reply is made from that alone.
    init(oversized size: Int, caller: Caller) {
        frame = Data()
        self.size = size
        self.caller = caller
        head = .failure(Self.tooLarge(size))
    }

    /// PROTOCOL "Requests and replies": a frame over 1 MiB is `invalid_argument` (field `request`).
    func checkSize() throws(WireError) {
        guard size > ServiceHost.largestRequest else { return }
        throw Self.tooLarge(size)
    }

    private static func tooLarge(_ size: Int) -> WireError {
        WireError.invalid("request", "a request frame is at most 1 MiB (1,048,576 bytes); this one has \(size) bytes")
    }
}

extension ServiceHost {
    /// The next message waiting on `socket` (the api, the intake) as a request: its last frame, with
    /// the caller its connection's User-Id names, and the frames before it (a routing envelope, the
    /// intake's topic), copied. A last frame over `largestRequest` is not copied (up to 4 MiB of it).
    public func receiveRequest(from socket: Socket) throws -> (envelope: [Data], request: IncomingRequest)? {
        try socket.withReceivedMultipart(dontWait: true) { frames in
            let body = frames[frames.count - 1], caller = caller(userId: frames.property("User-Id"))
            let request = body.count > Self.largestRequest ? IncomingRequest(oversized: body.count, caller: caller)
                                                           : IncomingRequest(frame: Data(body), caller: caller)
            return (frames.dropLast().map { Data($0) }, request)
        }
    }
}
