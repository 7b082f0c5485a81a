import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// PostgreSQL's history of the planner's tables after its first migration (`tables`).
extension PlannerStore {
    /// Announced cancellations keyed by user first: the occurrences one session covers are all its
    /// user's, so they share a leaf, where a key by reminder id (random) took a leaf of the key's
    /// index for each reminder covered and one of the table (docs/decisions/0018-planner-keys-for-locality.md).
    /// The reminder id is its 16 bytes, as in `reminder` and `decision`.
    static let announcementsByUser = Migration.postgres("announcements by user", [
        "CREATE TABLE announced_by_user (user_id TEXT NOT NULL, reminder_id BYTEA NOT NULL, at_ms BIGINT NOT NULL, cause TEXT NOT NULL, PRIMARY KEY (user_id, reminder_id, at_ms))",
        """
        INSERT INTO announced_by_user
            SELECT reminder.user_id, reminder.id, announced.at_ms, announced.cause
            FROM announced JOIN reminder ON reminder.id = CASE WHEN announced.reminder_id ~ '\(recordIDPattern)' THEN decode(replace(announced.reminder_id, '-', ''), 'hex') END
        """,
        "DROP TABLE announced",
        "ALTER TABLE announced_by_user RENAME TO announced",
    ])

    /// A record id's text, as PostgreSQL's migrations check it before decoding it.
    static let recordIDPattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

    /// How far each partition is decided, starting where the one `decidedThroughMs` was; and the
    /// users whose settings or reminders changed, for the other instances sharing the store
    /// (`ReminderPlanner.followOtherInstances`). The same statements on both backends.
    static let partitionsMigration = Migration("partitions", sql: [
        "CREATE TABLE decided_through (partition_index INTEGER PRIMARY KEY NOT NULL, at_ms BIGINT NOT NULL)",
        """
        INSERT INTO decided_through (partition_index, at_ms)
            WITH RECURSIVE partition_index (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM partition_index WHERE i < \(Ownership.partitionCount - 1))
            SELECT i, value FROM partition_index, planner_state WHERE key = 'decidedThroughMs'
        """,
        "DELETE FROM planner_state WHERE key = 'decidedThroughMs'",
        "CREATE TABLE changed_user (user_id TEXT PRIMARY KEY NOT NULL, version BIGINT NOT NULL)",
        "CREATE INDEX changed_user_by_version ON changed_user (version)",
    ])

    /// The copies of the logger's sessions keyed by its seq, not by their ids: a session's copy is
    /// appended at the end of the table, where a random id's index took a page of its own for each
    /// (docs/decisions/0018-planner-keys-for-locality.md). A repeated event has the same seq and id; a seq
    /// the copies hold with another id is of an earlier history the upstream no longer has
    /// (`--accept-upstream-reset`), and the new history's session takes its place (`insert`).
    static let sessionsBySeq = Migration.postgres("sessions by seq", [
        "DELETE FROM session a USING session b WHERE a.seq = b.seq AND a.ctid < b.ctid",
        "ALTER TABLE session DROP CONSTRAINT session_pkey",
        "ALTER TABLE session ADD PRIMARY KEY (seq)",
    ])

    /// PostgreSQL's decisions keyed by the reminder id's 16 bytes, as SQLite's (`decisionProjection`).
    /// Every id there was written from a `RecordID`; a row whose id is not one could not be asked for.
    static let decisionsByBytes = Migration.postgres("decisions by the reminder id's bytes", [
        "DELETE FROM decision WHERE reminder_id !~ '\(recordIDPattern)'",
        "ALTER TABLE decision ALTER COLUMN reminder_id TYPE BYTEA USING decode(replace(reminder_id, '-', ''), 'hex')",
    ])

    /// Each user's latest session end by activity, kept with the copies (`insert(session:)`) and
    /// filled from them once: what the start reads for `LatestLogged`, a row per user and activity.
    static let latestSessionEnds = Migration("latest session ends", sql: [
        "CREATE TABLE latest_session_end (user_id TEXT NOT NULL, activity TEXT NOT NULL, end_ms BIGINT NOT NULL, PRIMARY KEY (user_id, activity))",
        "INSERT INTO latest_session_end (user_id, activity, end_ms) SELECT user_id, activity, MAX(end_ms) FROM session GROUP BY user_id, activity",
    ])
}
