import CZeroMQ
import Foundation

extension Socket {
    /// Sends one frame. Returns false when `dontWait` is set and the message would block.
    @inlinable @discardableResult
    public func send<Bytes: ContiguousBytes>(_ frame: Bytes, more: Bool = false, dontWait: Bool = false) throws -> Bool {
        let handle = try open()
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        while true {
            // zmq_send copies the bytes, so the buffer only needs to live for the call.
            let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if rc >= 0 { return true }
            let error = ZMQError.last()
            if error.code == EINTR { continue }
            if error.code == EAGAIN { return false }
            throw error
        }
    }

    /// Sends a UTF-8 string as one frame (its byte count, not its character count).
    @discardableResult
    public func send(_ text: String, more: Bool = false, dontWait: Bool = false) throws -> Bool {
        var text = text  // withUTF8 may make it native, so it takes a var
        return try text.withUTF8 { try send(UnsafeRawBufferPointer($0), more: more, dontWait: dontWait) }
    }

    /// Sends every frame as one multipart message. Returns false only if the first frame would block.
    @inlinable @discardableResult
    public func send<Bytes: ContiguousBytes>(multipart frames: [Bytes], dontWait: Bool = false) throws -> Bool {
        guard let last = frames.last else { return true }
        return try send(multipart: frames.dropLast(), then: last, dontWait: dontWait)
    }

    /// As `send(multipart:)`, for `frames` followed by `last` (a routing envelope and a body),
    /// without building one array of them.
    @inlinable @discardableResult
    public func send<Frames: Collection, Last: ContiguousBytes>(multipart frames: Frames, then last: Last,
                                                                dontWait: Bool = false) throws -> Bool where Frames.Element: ContiguousBytes {
        var isFirst = true
        for frame in frames {
            // Once the first frame is queued libzmq accepts the rest atomically.
            if try !send(frame, more: true, dontWait: dontWait), isFirst { return false }
            isFirst = false
        }
        return try send(last, dontWait: dontWait) || !isFirst
    }
}
