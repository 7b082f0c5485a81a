import Foundation
import PostgresStorage

/// Which of a server's backends serve one process: its TCP sockets' local ports, matched against
/// `pg_stat_activity.client_port` (the process's connections over loopback).
enum ProcessSockets {
    /// The local ports of `pid`'s TCP sockets (IPv4 and IPv6): its open socket inodes looked up in
    /// the kernel's socket tables.
    static func localTCPPorts(of pid: pid_t) -> Set<Int> {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(descriptors.compactMap { descriptor -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst("socket:[".count).dropLast())
        })
        var ports: Set<Int> = []
        for table in ["/proc/\(pid)/net/tcp", "/proc/\(pid)/net/tcp6"] {
            // "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …"; the port is hex after the ':'.
            // Read to the end: a /proc file says it has no size, and a read by its size stops at a page.
            let text = FileHandle(forReadingAtPath: table).flatMap { try? $0.readToEnd() }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, inodes.contains(String(fields[9])),
                      let port = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) }) else { continue }
                ports.insert(port)
            }
        }
        return ports
    }

    /// The backends (pid) of `process` that sit idle inside a transaction that has written (it has
    /// an xid, so it holds the row locks it took): a paused client caught mid-transaction.
    static func idleInWritingTransaction(of process: pid_t, _ admin: PostgresConnection) throws -> [String] {
        try backends(of: process, admin).filter { $0.state == "idle in transaction" && $0.writing }.map(\.pid)
    }

    /// `process`'s backends: their pid, state, and whether their transaction has an xid.
    static func backends(of process: pid_t, _ admin: PostgresConnection) throws -> [(pid: String, state: String, writing: Bool)] {
        let ports = localTCPPorts(of: process)
        return try admin.execute("""
            SELECT pid, client_port, state, backend_xid IS NOT NULL FROM pg_stat_activity WHERE datname = current_database()
            """).compactMap { row in
            guard let port = row.text(1).flatMap({ Int($0) }), ports.contains(port), let pid = row.text(0) else { return nil }
            return (pid, row.text(2) ?? "", row.text(3) == "t")
        }
    }
}
