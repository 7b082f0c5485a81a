import CLibPQ
import Dispatch
import Glibc

/// Waiting for the server's answer outside libpq (`PostgresConnection.waitForServer`): libpq's own
/// wait blocks the calling thread until the answer comes, which for a statement queued behind
/// another session's row lock is as long as that session holds it.
extension PostgresConnection {
    /// How long an answer is waited for on the socket before the wait goes to `waitForServer`: an
    /// answer is usually back far sooner, and the owner's other work (a `health` reply) waits at most this.
    static let patienceNanoseconds: UInt64 = 20_000_000

    /// Returns once libpq can give the next result without blocking, or the connection failed
    /// (`PQgetResult` then says how); at once without `waitForServer`, leaving the wait to libpq.
    /// Always true, to sit in a `while` condition before `PQgetResult`.
    @discardableResult
    func awaitAnswer() -> Bool {
        guard let connection, let waitForServer, PQisBusy(connection) == 1 else { return true }
        let deadline = DispatchTime.now().uptimeNanoseconds + Self.patienceNanoseconds
        var socket = pollfd(fd: PQsocket(connection), events: Int16(POLLIN), revents: 0)
        while PQisBusy(connection) == 1 {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                waitForServer { PQconsumeInput(connection) == 0 || PQisBusy(connection) == 0 }
                return true
            }
            _ = poll(&socket, 1, Int32((deadline - now + 999_999) / 1_000_000))
            if PQconsumeInput(connection) == 0 { return true }
        }
        return true
    }
}
