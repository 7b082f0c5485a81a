import Foundation

extension DispatchGroup {
    /// Runs `body` on a thread of its own, inside this group: for probes that block (a socket, a
    /// lock wait), which would starve the global queue, as wide as the cores.
    public func startThread(_ body: @escaping @Sendable () -> Void) {
        enter()
        Thread {
            body()
            self.leave()
        }.start()
    }
}
