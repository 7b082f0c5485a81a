import Foundation

/// systemd's readiness protocol (sd_notify(3)) without libsystemd: one datagram with
/// newline-separated `KEY=VALUE` lines to the Unix socket named by `$NOTIFY_SOCKET` (a path, or
/// `@name` in the abstract namespace). Units with `Type=notify` wait for `READY=1`.
public enum SystemdNotify {
    /// Sends `state` (`READY=1`, `STOPPING=1`, `STATUS=…`); false when there is no socket to tell
    /// (not started by systemd) or the datagram could not be sent. Never throws: readiness
    /// reporting must not stop a service.
    @discardableResult
    public static func send(_ state: String, socket path: String? = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"]) -> Bool {
        guard let path, !path.isEmpty else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(path.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity, abstract || pathBytes.first == UInt8(ascii: "/") else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        // A path is NUL-terminated (the zeroed tail); an abstract name is exactly its bytes.
        let length = MemoryLayout.offset(of: \sockaddr_un.sun_path)! + pathBytes.count + (abstract ? 0 : 1)
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { bytes in
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, socklen_t(length))
                }
            }
        }
        return sent == message.count
    }
}
