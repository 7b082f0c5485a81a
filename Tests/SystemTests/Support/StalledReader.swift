import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP client with a small receive buffer (set before connecting, so the window is small
/// from the handshake on): it sends one HTTP request and then reads nothing until told to, the
/// reader that never reads.
final class StalledReader {
    private let descriptor: Int32

    init(port: Int, receiveBuffer: Int32 = 4096) throws {
        descriptor = try connectLoopback(port: port, receiveBuffer: receiveBuffer)
    }

    deinit { close(descriptor) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw HarnessError("send: errno \(errno)")
        }
    }

    /// Reads everything there is until the peer closes the connection (`closed`) or `timeout` passes.
    func drain(timeout: TimeInterval) -> (closed: Bool, received: Data) {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return (count == 0 || errno == ECONNRESET, received) }
            received.append(contentsOf: buffer[0..<count])
        }
        return (false, received)
    }
}

/// A process's resident memory in bytes (`VmRSS` of /proc/<pid>/status).
func residentBytes(of pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
    return kilobytes * 1024
}
