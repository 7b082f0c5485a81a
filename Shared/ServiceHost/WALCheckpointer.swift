import Foundation
import GRDB

/// Copies the write-ahead log back into the database file from a connection and thread of its own,
/// and keeps the log from growing without bound.
///
/// Left to the writer, SQLite checkpoints inside a commit every 1,000 pages: that commit, and the
/// requests waiting behind it, took tens of milliseconds (the p99 of `session.log` acks went from
/// 2 ms to 25 ms). A passive checkpoint never blocks the writer — but it never lets the log start
/// over either: SQLite rewinds the log only when a write transaction begins with every frame
/// already copied back, and under steady load the writer always begins right after its own last
/// commit, before the checkpointer has caught up. So the log grew by a page per commit forever
/// (25 GB in a 30-minute soak). Once it passes `limit`, a TRUNCATE checkpoint holds new writers for
/// the moment it takes to copy the last frames (the passive ones did the rest) and empties the file.
public final class WALCheckpointer {
    /// Past this the log is emptied; SQLite also truncates it to this size whenever it rewinds.
    public static let defaultLimit: Int64 = 64 << 20
    private let timer: DispatchSourceTimer

    init(path: String, every interval: DispatchTimeInterval = .milliseconds(200), limit: Int64 = defaultLimit) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        let walPath = path + "-wal"
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "wal-checkpoint", qos: .utility))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler {
            let size = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int64) ?? 0
            let mode = size > limit ? "TRUNCATE" : "PASSIVE"
            _ = try? database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(\(mode))") }
        }
        timer.resume()
        self.timer = timer
    }

    deinit { timer.cancel() }
}
