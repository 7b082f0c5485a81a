import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// Partitions and other instances.
extension PlannerStore {
    /// Each partition's decided-through instant, by partition.
    static func decidedThrough(_ sql: StoreConnection) throws -> [Int: Instant] {
        Dictionary(try sql.rows("SELECT partition_index, at_ms FROM decided_through", []) { row in
            guard let partition = row.integer(0), let at = row.integer(1) else { return nil }
            return (Int(partition), Instant(millisecondsSince1970: at))
        }) { first, _ in first }
    }

    /// A fresh store's partitions are decided through `now`: nothing before it is caught up on.
    static func startDecidedThrough(at now: Instant, _ sql: StoreConnection) throws {
        let rows = (0..<Ownership.partitionCount).map { "(\($0), \(now.millisecondsSince1970))" }.joined(separator: ", ")
        try sql.execute("INSERT INTO decided_through (partition_index, at_ms) VALUES \(rows) ON CONFLICT (partition_index) DO NOTHING", [])
    }

    static func setDecidedThrough(_ instant: Instant, of partitions: PartitionSet, _ sql: StoreConnection) throws {
        let only = partitions == .all ? "" : " AND partition_index IN (\(partitions.sqlList))"
        try sql.execute("UPDATE decided_through SET at_ms = ? WHERE at_ms < ?" + only,
                        [.integer(instant.millisecondsSince1970), .integer(instant.millisecondsSince1970)])
    }

    /// Records that `user`'s settings or reminders changed, at `version` (`memoryVersion`).
    static func noteChanged(_ user: UserID, version: Int64, _ sql: StoreConnection) throws {
        try sql.execute("INSERT INTO changed_user (user_id, version) VALUES (?, ?) ON CONFLICT (user_id) DO UPDATE SET version = excluded.version",
                        [.text(user.rawValue), .integer(version)])
        try setValue("memoryVersion", version, sql)
    }

    static func changedUsers(since version: Int64, _ sql: StoreConnection) throws -> [UserID] {
        try sql.rows("SELECT user_id FROM changed_user WHERE version > ?", [.integer(version)]) { $0.text(0).flatMap(UserID.init) }
    }

    static func user(_ id: UserID, _ sql: StoreConnection) throws -> UserSettings? {
        try users(sql, only: id).first
    }

    // MARK: Planner state

    static func value(_ key: String, _ sql: StoreConnection) throws -> Int64? {
        try sql.first("SELECT value FROM planner_state WHERE key = ?", [.text(key)]) { $0.integer(0) }
    }

    static func setValue(_ key: String, _ value: Int64, _ sql: StoreConnection) throws {
        try sql.execute("INSERT INTO planner_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [.text(key), .integer(value)])
    }
}
