import CZeroMQ
import Foundation

extension Socket {
    /// Receives one frame; nil when nothing arrived (`dontWait`, or the receive timeout passed).
    public func receive(dontWait: Bool = false) throws -> Data? {
        try withReceivedFrames(dontWait: dontWait, whole: false) { Data($0[0]) }
    }

    /// Receives a whole multipart message; nil when nothing arrived.
    public func receiveMultipart(dontWait: Bool = false) throws -> [Data]? {
        try withReceivedMultipart(dontWait: dontWait) { $0.map { Data($0) } }
    }

    /// Receives a whole multipart message with one property of its connection, e.g. "User-Id" (what the
    /// ZAP handler said for the peer: on a ROUTER per request, on an XPUB per subscription message) or
    /// "Peer-Address". The property is nil when the connection has none. nil when nothing arrived.
    public func receiveMultipart(dontWait: Bool = false, property: String) throws -> (frames: [Data], property: String?)? {
        try withReceivedMultipart(dontWait: dontWait) { ($0.map { Data($0) }, $0.property(property)) }
    }

    /// Receives a whole multipart message and hands `read` its frames where libzmq put them: nothing
    /// is copied or allocated per message. The frames are valid only until `read` returns, and `read`
    /// must not receive on this socket (the next message would take their buffers). nil (and `read`
    /// is not called) when nothing arrived.
    public func withReceivedMultipart<Result>(dontWait: Bool = false, _ read: (ReceivedFrames) throws -> Result) throws -> Result? {
        try withReceivedFrames(dontWait: dontWait, whole: true, read)
    }

    /// Receives the next frame, or (`whole`) every frame of the next message, into `messages`, hands
    /// them to `read` and closes them.
    private func withReceivedFrames<Result>(dontWait: Bool, whole: Bool, _ read: (ReceivedFrames) throws -> Result) throws -> Result? {
        let handle = try open()
        var count = 0
        defer { for index in 0..<count { zmq_msg_close(messages + index) } }
        var more = true
        while more && (whole || count == 0) {
            if count == messageCapacity { growMessages(keeping: count) }
            let message = messages + count
            zmq_msg_init(message)
            count += 1
            // The rest of a multipart message is already here (libzmq delivers it whole): only the first frame waits.
            while zmq_msg_recv(message, handle, (count == 1 && dontWait) ? ZMQ_DONTWAIT : 0) < 0 {
                let error = ZMQError.last()
                if error.code == EINTR { continue }
                if error.code == EAGAIN && count == 1 { return nil }
                throw error
            }
            // From the message itself, rather than asking the socket afterwards (ZMQ_RCVMORE).
            more = zmq_msg_more(message) != 0
        }
        return try read(ReceivedFrames(messages, count: count))
    }

    /// Doubles the receive buffers, moving the `open` frames received so far into the new ones.
    private func growMessages(keeping open: Int) {
        let grown = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: messageCapacity * 2)
        for index in 0..<open {
            zmq_msg_init(grown + index)
            zmq_msg_move(grown + index, messages + index)
            zmq_msg_close(messages + index)
        }
        messages.deallocate()
        messages = grown
        messageCapacity *= 2
    }
}

/// The frames of one received message, in libzmq's buffers: valid only inside the
/// `withReceivedMultipart` call that hands them over.
public struct ReceivedFrames: RandomAccessCollection {
    @usableFromInline let messages: UnsafeMutablePointer<zmq_msg_t>
    public let count: Int

    init(_ messages: UnsafeMutablePointer<zmq_msg_t>, count: Int) {
        self.messages = messages
        self.count = count
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    @inlinable public subscript(index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < count, "frame index out of range")
        return UnsafeRawBufferPointer(start: zmq_msg_data(messages + index), count: zmq_msg_size(messages + index))
    }

    /// One property of the message's connection, e.g. "User-Id"; nil when the connection has none
    /// (no User-Id without ZAP). A ROUTER makes the routing-id frame itself, without the connection's
    /// metadata, so each frame is asked until one has it.
    public func property(_ name: String) -> String? {
        for index in 0..<count {
            if let value = zmq_msg_gets(messages + index, name) { return String(cString: value) }
        }
        return nil
    }
}
