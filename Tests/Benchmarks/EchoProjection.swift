import Foundation
import GRDB
import LHTSchema
import SQLiteStorage
import Storage
import Synchronization

/// The session logger's projection applied on a thread of its own from what the durable echo
/// logged: the floor of a log in a file with its projection applied behind it, off the loop
/// (docs/storage.md, the session logger's log as a file).
/// Each batch the echo synced is handed over after its replies left; the thread decodes every
/// `session.log` frame and inserts its session row, a batch a transaction, into a file configured as
/// the logger's projection is (`ProjectionFile`: 4 KB pages, a persisted rollback journal,
/// synchronous OFF, locked for the connection's life). Nothing waits for it, as a write would not;
/// `appliedRate` says whether it keeps up.
final class EchoProjection: Sendable {
    private struct Pending {
        var frames: [Data] = []
        var stopping = false
        var firstHanded: ContinuousClock.Instant?
        var lastApplied: ContinuousClock.Instant?
        var applied = 0
    }

    private struct LoggedSession: Decodable { let data: SessionLogRequest }

    private let pending = Mutex(Pending())
    private let ready = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(path: String) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: """
                PRAGMA page_size = 4096; PRAGMA journal_mode = PERSIST; PRAGMA synchronous = OFF;
                PRAGMA cache_size = -\(16 << 10); PRAGMA locking_mode = EXCLUSIVE
                """)
        }
        let database = try DatabaseQueue(path: path, configuration: configuration)
        try database.write { try $0.execute(sql: WritesBenchmark.sessionTable) }
        Thread { [self] in
            defer { finished.signal() }
            while true {
                ready.wait()
                let (frames, stopping) = pending.withLock { state in
                    defer { state.frames = [] }
                    return (state.frames, state.stopping)
                }
                if !frames.isEmpty {
                    do {
                        try database.write { db in
                            for frame in frames {
                                let session = try WireJSON.decode(LoggedSession.self, from: frame).data
                                try WritesBenchmark.insertSession(session, seq: 0, in: db)
                            }
                        }
                    } catch {
                        fatalError("the echo's projection: \(error)")
                    }
                    let now = ContinuousClock.now
                    pending.withLock { state in
                        state.applied += frames.count
                        state.lastApplied = now
                    }
                }
                if stopping { return }
            }
        }.start()
    }

    /// Hands over a batch the echo logged and synced.
    func apply(_ frames: [Data]) {
        let now = ContinuousClock.now
        pending.withLock { state in
            state.frames += frames
            if state.firstHanded == nil { state.firstHanded = now }
        }
        ready.signal()
    }

    /// Rows per second from the first batch handed over until the last one was applied: the rate
    /// the design sustains, where it is below the echo's own.
    var appliedRate: Double {
        pending.withLock { state in
            guard let first = state.firstHanded, let last = state.lastApplied, state.applied > 0 else { return 0 }
            return Double(state.applied) / ((last - first) / .seconds(1))
        }
    }

    /// Waits until everything handed over is applied, then ends the thread.
    func finish() {
        pending.withLock { $0.stopping = true }
        ready.signal()
        finished.wait()
    }
}
