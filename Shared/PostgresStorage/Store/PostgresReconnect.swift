import Foundation
import Storage
import Synchronization

/// Connects to PostgreSQL again on a thread of its own, so that the service's loop never waits on
/// libpq's blocking connect (a host that does not answer holds it for `connect_timeout` per host):
/// meanwhile requests that need the database answer `unavailable` and `health` answers. The loop
/// asks with `take()`; the first ask starts an attempt, a later one takes its connection once made.
/// A failed attempt is repeated with back-off, no sooner than the loop asks again.
final class PostgresReconnect: Sendable {
    enum Outcome {
        case connected(PostgresConnection)
        /// Not yet: an attempt runs, or the last one failed (its error) and the next waits its turn.
        case waiting(String)
    }

    /// A connection made on the connecting thread, handed once to the loop thread.
    private final class Handed: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    private struct State {
        var attempting = false
        var made: Handed?
        var lastError = "connecting to PostgreSQL"
        var notBefore: UInt64 = 0
        var delaySeconds = 0.25
        var closed = false
    }

    private let state = Mutex(State())
    private let connect: @Sendable () throws -> PostgresConnection

    /// `connect` makes a connection ready for the store (its settings made); it runs on the thread.
    init(_ connect: @escaping @Sendable () throws -> PostgresConnection) {
        self.connect = connect
    }

    /// The connection made since the last call, if any; else starts an attempt when none runs and
    /// the back-off allows, and says why there is none yet.
    func take() -> Outcome {
        let (made, start, reason): (Handed?, Bool, String) = state.withLock { state in
            if let made = state.made {
                state.made = nil
                state.delaySeconds = 0.25
                return (made, false, "")
            }
            let start = !state.attempting && !state.closed && DispatchTime.now().uptimeNanoseconds >= state.notBefore
            if start { state.attempting = true }
            return (nil, start, state.lastError)
        }
        if let made { return .connected(made.connection) }
        if start { Thread { [self] in attempt() }.start() }
        return .waiting(reason)
    }

    private func attempt() {
        let result: Result<Handed, Error>
        do { result = .success(Handed(try connect())) } catch { result = .failure(error) }
        let unwanted: Handed? = state.withLock { state in
            state.attempting = false
            switch result {
            case .success(let made):
                if state.closed { return made }
                state.made = made
            case .failure(let error):
                state.lastError = "\(error)"
                state.notBefore = DispatchTime.now().uptimeNanoseconds + UInt64(state.delaySeconds * 1e9)
                state.delaySeconds = min(state.delaySeconds * 2, 5)
            }
            return nil
        }
        unwanted?.connection.close()
    }

    /// No more attempts; a connection made from here on is closed.
    func close() {
        let made = state.withLock { state in
            state.closed = true
            defer { state.made = nil }
            return state.made
        }
        made?.connection.close()
    }
}
