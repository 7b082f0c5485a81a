import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

/// A stored reminder as loading reads it: its fields without building a `Reminder`, and its texts.
struct StoredReminder: Sendable {
    let fields: ReminderTable.Fields
    let title: String?
    let body: String?

    var reminder: Reminder {
        let rule = fields.rule
        return Reminder(id: fields.id, userId: fields.userId, activity: rule.activity, time: rule.time,
                        weekdays: Weekday.allCases.filter { rule.weekdays.bits >> UInt8($0.index) & 1 == 1 }, lookbackHours: rule.lookbackHours,
                        enabled: rule.enabled, title: title, body: body, createdAt: Instant(millisecondsSince1970: fields.createdAt))
    }
}

extension PlannerStore {
    /// Hands every stored reminder to `body`, a batch at a time, on this thread. Rows that do not
    /// parse are skipped. SQLite's rows are read by a thread of their own (`streamReminders(from:)`);
    /// PostgreSQL's come in pages by id on this thread, whose connection it is.
    static func streamReminders(from store: any Store, _ body: ([StoredReminder]) -> Void) throws {
        if let reads = store.concurrentReads {
            try streamReminders(from: reads, body)
        } else {
            try pageReminders(store, body)
        }
    }

    private static let selectReminders = "SELECT id, user_id, rule, title, body, created_at_ms FROM reminder"

    /// SQLite: another thread reads and parses the rows while this one takes them: stepping SQLite
    /// through a million rows took as long as filling the table with them, so the two overlap.
    private static func streamReminders(from reads: ConcurrentReads, _ body: ([StoredReminder]) -> Void) throws {
        let pipe = HandOff<[StoredReminder]>(waitingLimit: 8)
        // A thread of its own, not a GCD work item: it blocks for as long as loading takes, and
        // blocked items hold the global queue's few threads from everyone else in the process.
        let reader = Thread {
            pipe.finish(Result {
                try reads.readOnce { sql in
                    var batch: [StoredReminder] = []
                    batch.reserveCapacity(batchSize)
                    var lastUser: UserID?
                    try sql.forEachRow(selectReminders, []) { row in
                        guard let reminder = storedReminder(row, lastUser: &lastUser) else { return }
                        batch.append(reminder)
                        if batch.count == batchSize {
                            pipe.put(batch)
                            batch.removeAll(keepingCapacity: true)
                        }
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

    /// `user`'s reminders as stored.
    static func reminders(of user: UserID, _ sql: StoreConnection) throws -> [Reminder] {
        var lastUser: UserID?
        return try sql.rows(selectReminders + " WHERE user_id = ?", [.text(user.rawValue)]) { storedReminder($0, lastUser: &lastUser)?.reminder }
    }

    /// PostgreSQL: a page of rows at a time, by id (the primary key's order), so that a million rows
    /// never come back as one result.
    private static func pageReminders(_ store: any Store, _ body: ([StoredReminder]) -> Void) throws {
        let pageSize = 10_000
        var after: Data?
        var lastUser: UserID?
        while true {
            var batch: [StoredReminder] = [], read = 0
            try store.query { sql in
                try sql.forEachRow(selectReminders + (after == nil ? "" : " WHERE id > ?") + " ORDER BY id LIMIT \(pageSize)",
                                   after.map { [.blob($0)] } ?? []) { row in
                    read += 1
                    after = row.withBytes(0) { Data($0) }
                    if let reminder = storedReminder(row, lastUser: &lastUser) { batch.append(reminder) }
                }
            }
            if !batch.isEmpty { body(batch) }
            if read < pageSize { return }
        }
    }

    /// A user's reminders mostly come one after another: `lastUser` is reused while the bytes match.
    private static func storedReminder(_ row: SQLRow, lastUser: inout UserID?) -> StoredReminder? {
        if let last = lastUser, row.withUTF8(1, { last.hasUTF8($0) }) != true { lastUser = nil }
        if lastUser == nil { lastUser = row.text(1).flatMap(UserID.init) }
        guard let id = row.withBytes(0, { RecordID(bytes: $0) }) ?? nil, let user = lastUser,
              let rule = row.integer(2).flatMap(StoredRule.init(bits:)), let createdAt = row.integer(5),
              let title = row.optionalText(3), let body = row.optionalText(4) else { return nil }
        return StoredReminder(fields: ReminderTable.Fields(id: id, userId: user, rule: rule, createdAt: createdAt), title: title, body: body)
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
