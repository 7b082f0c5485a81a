import Foundation
import Storage

/// Writing files whole and durably: the event file's records, a new file, its index.
extension EventFile {
    /// Writes all of `bytes` at `offset`, again after an interruption; a full disk is an error.
    static func writeFully(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws {
        var written = 0
        while written < bytes.count {
            let result = pwrite(descriptor, bytes.baseAddress! + written, bytes.count - written, offset + written)
            let code = errno
            if result < 0 && code == EINTR { continue }
            guard result > 0 else { throw StorageError.system(path, "writing the event log", errno: result < 0 ? code : ENOSPC) }
            written += result
        }
    }

    /// Writes a private file at `path` whole or not at all: under a temporary name, synced, renamed
    /// into place, the directory synced (a renamed file's entry is on disk only then).
    static func writeWhole(_ path: String, _ write: (_ descriptor: Int32, _ temporary: String) throws -> Void) throws {
        let temporary = path + ".new"
        unlink(temporary)
        try DataDirectory.createPrivateFile(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StorageError("\(temporary): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        try write(descriptor, temporary)
        guard fsync(descriptor) == 0, rename(temporary, path) == 0 else { throw StorageError("\(path): \(String(cString: strerror(errno)))") }
        try syncDirectory(of: path)
    }

    private static func syncDirectory(of path: String) throws {
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { throw StorageError("\(path): \(String(cString: strerror(errno)))") }
        defer { close(directory) }
        guard fsync(directory) == 0 else { throw StorageError("\(path): syncing its directory: \(String(cString: strerror(errno)))") }
    }
}
