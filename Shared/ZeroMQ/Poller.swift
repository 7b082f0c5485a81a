import CZeroMQ
import Glibc

/// Waits on sockets owned by the calling thread, and on wake signals, with one `poll(2)`.
///
/// Not `zmq_poll`, which reads every socket's `ZMQ_EVENTS` (a `poll` and a `getpid` each) before
/// and after each wait, though a service's loop polls several sockets of which one is busy.
/// libzmq's contract for `ZMQ_FD` is followed instead: the descriptor is edge-triggered, so the
/// events are read of a socket that was called since they were last found empty
/// (`Socket.mayHoldUnsignalled`) and of one whose descriptor became readable, and of no other.
public enum Poller {
    /// Waits until at least one socket is readable or `timeoutMilliseconds` pass (-1: no limit).
    /// Returns, per socket, whether it is readable. An interrupted wait returns all false.
    public static func readable(_ sockets: [Socket], timeoutMilliseconds: Int) throws -> [Bool] {
        try readable(sockets, signals: [], timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The same over sockets and then `signals`: per socket, then per signal, whether it is readable.
    public static func readable(_ sockets: [Socket], signals: [WakeSignal], timeoutMilliseconds: Int) throws -> [Bool] {
        let none = [Bool](repeating: false, count: sockets.count + signals.count)
        var ready = none, found = false
        /// Reads the events of socket `index`; false when a signal interrupted that.
        func look(at index: Int) throws -> Bool {
            guard let readable = try sockets[index].hasMessageNow() else { return false }
            ready[index] = readable
            found = found || readable
            return true
        }
        for index in sockets.indices where sockets[index].mayHoldUnsignalled {
            guard try look(at: index) else { return none }
        }
        var descriptors = try sockets.map { pollfd(fd: try $0.pollDescriptor(), events: Int16(POLLIN), revents: 0) }
            + signals.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        let deadline = timeoutMilliseconds < 0 ? nil : ContinuousClock.now + .milliseconds(timeoutMilliseconds)
        while true {
            // Only a look when a socket is readable already: the signals' state is still reported.
            var wait = -1
            if found {
                wait = 0
            } else if let deadline {
                wait = max(0, Int(((deadline - ContinuousClock.now) / .milliseconds(1)).rounded(.up)))
            }
            guard poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: wait)) >= 0 else {
                if errno == EINTR { return none }
                throw ZMQError(code: errno)
            }
            for index in sockets.indices where !ready[index] && descriptors[index].revents != 0 {
                guard try look(at: index) else { return none }
            }
            for index in signals.indices where descriptors[sockets.count + index].revents & Int16(POLLIN) != 0 {
                ready[sockets.count + index] = true
                found = true
            }
            // A descriptor may wake the wait for commands that leave nothing to receive: wait on.
            if found || wait == 0 { return ready }
        }
    }
}
