import Foundation

/// A second "host" for a test: a network namespace joined to this one by a veth pair on a /24 of
/// its own, whose link the test can cut (`ip link set … down`: packets vanish, no connection is
/// reset, as when a host drops off the network). Needs root, as CI runs; removed by `remove()`.
final class NetworkNamespace {
    let name: String
    /// This side's address on the link, and the namespace's.
    let hostAddress: String, address: String
    private let hostLink: String

    init() throws {
        let tag = String(UInt32.random(in: 0...0xFFFFF), radix: 16)
        name = "lht-\(tag)"
        hostLink = "lht\(tag)h"
        let subnet = "10.\(Int.random(in: 100..<200)).\(Int.random(in: 0..<250))"
        (hostAddress, address) = ("\(subnet).1", "\(subnet).2")
        let peer = "lht\(tag)n"
        try Self.ip(["netns", "add", name])
        try Self.ip(["link", "add", hostLink, "type", "veth", "peer", "name", peer])
        try Self.ip(["link", "set", peer, "netns", name])
        try Self.ip(["addr", "add", "\(hostAddress)/24", "dev", hostLink])
        try Self.ip(["link", "set", hostLink, "up"])
        for command in [["addr", "add", "\(address)/24", "dev", peer], ["link", "set", peer, "up"], ["link", "set", "lo", "up"]] {
            try Self.ip(["netns", "exec", name, Self.ipPath] + command)
        }
    }

    /// What runs a program inside the namespace (`ip netns exec` enters it and execs the program:
    /// the same process, so its pid and signals are the program's).
    var launcher: [String] { [Self.ipPath, "netns", "exec", name] }

    func cut() throws { try Self.ip(["link", "set", hostLink, "down"]) }

    func mend() throws { try Self.ip(["link", "set", hostLink, "up"]) }

    /// Deleting the link deletes its peer; then the namespace.
    func remove() {
        try? Self.ip(["link", "del", hostLink])
        try? Self.ip(["netns", "del", name])
    }

    static let ipPath = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "ip"

    private static func ip(_ arguments: [String]) throws {
        let run = try CapturedProcess(ipPath, arguments).finish(timeout: 10)
        guard run.status == 0 else { throw HarnessError("ip \(arguments.joined(separator: " ")): \(run.stderr) (iproute2, as root)") }
    }
}
