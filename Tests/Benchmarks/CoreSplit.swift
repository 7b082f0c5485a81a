import Foundation
import Glibc

/// The box's cores split between the services and a database server, as if the server ran on a
/// host of its own: the last core for the server's processes, the others for every thread of this
/// process. On a box of few cores the scheduler otherwise often runs the server's backend on the
/// core of the service that waits for it, and the two take turns instead of working at once
/// (docs/decisions/0034-the-ack-bench-measures-the-database-apart.md).
enum CoreSplit {
    /// The cores this process may run on now.
    static var cores: [Int32] {
        var set = cpu_set_t()
        guard getAffinity(0, MemoryLayout<cpu_set_t>.size, &set) == 0 else { return [] }
        return (0..<Int32(MemoryLayout<cpu_set_t>.size * 8)).filter { isSet($0, in: set) }
    }

    /// Pins the server's processes to the last of `cores` and this process's threads to the rest
    /// (nil with fewer than two cores); `undo` puts everyone back on all of `cores`.
    static func split(_ cores: [Int32], server: [pid_t]) -> (undo: () -> Void, description: String)? {
        guard cores.count >= 2, let serverCore = cores.last else { return nil }
        let services = Array(cores.dropLast())
        pin(threadsOfThisProcess(), to: services)
        pin(server, to: [serverCore])
        return ({ pin(threadsOfThisProcess(), to: cores); pin(server, to: cores) },
                "the database server on core \(serverCore), the services on \(services.count == 1 ? "core" : "cores") "
                    + services.map(String.init).joined(separator: ", "))
    }

    /// This process's threads; one made later runs where the thread that made it may.
    private static func threadsOfThisProcess() -> [pid_t] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap(pid_t.init)
    }

    private static func pin(_ tasks: [pid_t], to cores: [Int32]) {
        var set = cpu_set_t()
        withUnsafeMutableBytes(of: &set) { bytes in
            for core in cores { bytes[Int(core) / 8] |= UInt8(1 << (core % 8)) }
        }
        // A task that ended meanwhile fails with ESRCH: nothing to pin.
        for task in tasks { _ = setAffinity(task, MemoryLayout<cpu_set_t>.size, &set) }
    }

    // glibc's, which Swift's Glibc module leaves out (they need _GNU_SOURCE).
    private typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32
    private static let getAffinity = unsafeBitCast(dlsym(nil, "sched_getaffinity")!, to: Affinity.self)
    private static let setAffinity = unsafeBitCast(dlsym(nil, "sched_setaffinity")!, to: Affinity.self)

    private static func isSet(_ core: Int32, in set: cpu_set_t) -> Bool {
        withUnsafeBytes(of: set) { $0[Int(core) / 8] & UInt8(1 << (core % 8)) != 0 }
    }
}
