import CZeroMQ

/// `zmq_poll` over sockets owned by the calling thread (and wake signals it waits for).
public enum Poller {
    /// Waits until at least one socket is readable or `timeoutMilliseconds` pass (-1: no limit).
    /// Returns, per socket, whether it is readable. An interrupted wait returns all false.
    public static func readable(_ sockets: [Socket], timeoutMilliseconds: Int) throws -> [Bool] {
        try readable(sockets, signals: [], timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The same over sockets and then `signals`: per socket, then per signal, whether it is readable.
    public static func readable(_ sockets: [Socket], signals: [WakeSignal], timeoutMilliseconds: Int) throws -> [Bool] {
        var items = sockets.map { zmq_pollitem_t(socket: $0.pollHandle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0) }
            + signals.map { zmq_pollitem_t(socket: nil, fd: $0.descriptor, events: Int16(ZMQ_POLLIN), revents: 0) }
        let rc = zmq_poll(&items, Int32(items.count), timeoutMilliseconds)
        if rc < 0 {
            let error = ZMQError.last()
            if error.code == EINTR { return Array(repeating: false, count: items.count) }
            throw error
        }
        return items.map { $0.revents & Int16(ZMQ_POLLIN) != 0 }
    }
}
