import Foundation
import Synchronization

/// A fresh directory under /tmp for one test's data, removed when the process exits.
public func temporaryDirectory(_ label: String = "lht") -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    removedAtExit.withLock { directories in
        if directories.isEmpty { atexit { for url in removedAtExit.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) } } }
        directories.append(url)
    }
    return url
}

/// What `temporaryDirectory` made: services' databases, keys, certificates, logs. Before they were
/// removed, a full test run left 275 of them in /tmp.
private let removedAtExit = Mutex<[URL]>([])

/// A temporary directory that is removed with this object: one per test, a subdirectory per service.
public final class ScratchDirectory: Sendable {
    public let url: URL

    public init(_ label: String = "lht") { url = temporaryDirectory(label) }

    /// `url/name`, created.
    public func subdirectory(_ name: String) -> URL {
        let sub = url.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        return sub
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// A failure of the test harness itself (a service that did not start or answer in time), as
/// opposed to an expectation that did not hold.
public struct HarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
