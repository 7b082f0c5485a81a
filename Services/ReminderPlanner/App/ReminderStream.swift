import Foundation
import GRDB
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

/// A stored reminder as loading reads it: its fields without building a `Reminder`, and its texts.
struct StoredReminder: Sendable {
    let fields: ReminderTable.Fields
    let title: String?
    let body: String?
}

extension PlannerStore {
    /// Hands every stored reminder to `body`, a batch at a time, on this thread, while another thread
    /// reads and parses the rows: stepping SQLite through a million rows took as long as filling the
    /// table with them, so the two overlap. Rows that do not parse are skipped.
    static func streamReminders(from database: DatabaseQueue, _ body: ([StoredReminder]) -> Void) throws {
        let pipe = HandOff<[StoredReminder]>(waitingLimit: 8)
        // A thread of its own, not a GCD work item: it blocks for as long as loading takes, and
        // blocked items hold the global queue's few threads from everyone else in the process.
        let reader = Thread {
            pipe.finish(Result {
                try database.read { db in
                    // One pass, never read again: through a small page cache, so that loading does not
                    // leave the connection's cache (16 MB) full of reminder pages.
                    let cacheSize = try Int.fetchOne(db, sql: "PRAGMA cache_size") ?? -2000
                    try db.execute(sql: "PRAGMA cache_size = -1024")
                    defer { try? db.execute(sql: "PRAGMA cache_size = \(cacheSize)") }
                    var batch: [StoredReminder] = []
                    batch.reserveCapacity(batchSize)
                    var lastUser: UserID?
                    try RawStatement.run("""
                        SELECT id, user_id, rule, title, body, created_at_ms FROM reminder
                        """, db, []) { row -> Void? in
                        guard let reminder = storedReminder(row, lastUser: &lastUser) else { return nil }
                        batch.append(reminder)
                        if batch.count == batchSize {
                            pipe.put(batch)
                            batch.removeAll(keepingCapacity: true)
                        }
                        return nil
                    }
                    if !batch.isEmpty { pipe.put(batch) }
                }
            })
        }
        reader.name = "reminder-reader"
        reader.start()
        while let batch = try pipe.take() { body(batch) }
    }

    private static let batchSize = 1024

    /// A user's reminders mostly come one after another: `lastUser` is reused while the bytes match.
    private static func storedReminder(_ row: RawStatement.Row, lastUser: inout UserID?) -> StoredReminder? {
        if let last = lastUser, !last.hasUTF8(row.bytes(1)) { lastUser = nil }
        if lastUser == nil { lastUser = UserID(row.string(1)) }
        guard let id = RecordID(bytes: row.blob(0)), let user = lastUser, let rule = StoredRule(bits: row.integer(2)) else { return nil }
        return StoredReminder(
            fields: ReminderTable.Fields(id: id, userId: user, rule: rule, createdAt: row.integer(5)),
            title: row.optionalString(3), body: row.optionalString(4))
    }
}

private extension UserID {
    func hasUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var text = rawValue
        return text.withUTF8 { sameBytes($0, bytes) }
    }
}

private func sameBytes(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>) -> Bool {
    first.count == second.count && (first.isEmpty || memcmp(first.baseAddress!, second.baseAddress!, first.count) == 0)
}
