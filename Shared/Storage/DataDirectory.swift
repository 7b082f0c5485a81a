import Foundation

/// The directory a service keeps its files in, and the files in it: private to their owner.
public enum DataDirectory {
    /// Creates the directory (0700, whatever the umask: it holds health data) and proves it
    /// writable, so a bad `--data-dir` fails before anything is bound.
    public static func prepared(_ path: String) throws -> URL {
        let url = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            guard chmod(url.path, 0o700) == 0 else { throw CocoaError(.fileWriteNoPermission) }
            let probe = url.appendingPathComponent(".write-probe-\(getpid())")
            try createPrivateFile(probe.path)
            try FileManager.default.removeItem(at: probe)
        } catch {
            throw StorageError("--data-dir: \(path) is not a writable directory")
        }
        return url
    }

    /// Creates `path` (if missing) readable and writable by its owner only, whatever the umask.
    /// SQLite gives its `-wal` and `-shm` files the mode of the database file, so creating the
    /// database this way keeps all three private.
    public static func createPrivateFile(_ path: String) throws {
        let descriptor = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
        defer { close(descriptor) }
        guard fchmod(descriptor, 0o600) == 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
    }
}

/// A storage failure worth one clear line to whoever started the service.
public struct StorageError: Error, CustomStringConvertible {
    public let description: String
    /// The system call's `errno`, where one failed: tells a full or failing disk (`StoreUnavailable.cause`).
    public let errno: Int32?
    public init(_ description: String, errno: Int32? = nil) {
        self.description = description
        self.errno = errno
    }

    /// `<path>: <what>: <strerror>`, keeping `code`.
    public static func system(_ path: String, _ what: String, errno code: Int32) -> StorageError {
        StorageError("\(path): \(what): \(String(cString: strerror(code)))", errno: code)
    }
}
