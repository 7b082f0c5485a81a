import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// What SQLite derives from the log: the copies of the logger's sessions and days, and the decisions.
extension PlannerStore {
    /// The decisions, replayed from the decision events when the projection file is behind or
    /// rebuilt, and the copies of the logger's sessions and NoAlc days (its feed refills them).
    static let projection = Projection(migrations: [
        .sqlite("decisions and copies", """
                CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms);
                CREATE TABLE noalc_day (user_id TEXT NOT NULL, day TEXT NOT NULL, entry_id TEXT NOT NULL, PRIMARY KEY (user_id, day));
                """),
        .sqlite(sessionsBySeq.name, """
                CREATE TABLE session_by_seq (id TEXT NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, seq INTEGER PRIMARY KEY NOT NULL);
                INSERT OR REPLACE INTO session_by_seq (id, user_id, activity, start_ms, end_ms, seq)
                    SELECT id, user_id, activity, start_ms, end_ms, seq FROM session ORDER BY rowid;
                DROP TABLE session;
                ALTER TABLE session_by_seq RENAME TO session;
                CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms);
                """),
        .sqlite("decisions in their key's b-tree", """
                CREATE TABLE decision_by_key (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO decision_by_key SELECT reminder_id, at_ms, status, cause, day, local_minute FROM decision;
                DROP TABLE decision;
                ALTER TABLE decision_by_key RENAME TO decision;
                """),
        // To `decisionProjection`, a file a thread applies from the decision events behind the log
        // (docs/decisions/0015-planner-decisions-behind-the-log.md).
        .sqlite("decisions behind the log", "DROP TABLE decision"),
        latestSessionEnds,
    ], replay: nil)

    /// The decisions, one row per decision event, keyed by occurrence: applied from the log on a
    /// thread of their own after each commit (`TablesBehindTheLog`), so deciding writes the
    /// event alone; replayed from the log into a file that is new, rebuilt or behind.
    ///
    /// The reminder's id is its 16 bytes (on PostgreSQL too: `decisionsByBytes`): as 36 characters of
    /// text it made the row half as long again, and the thread's b-tree writes and key comparisons with it.
    static let decisionProjection = Projection(migrations: [
        .sqlite("decisions", """
                CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms)) WITHOUT ROWID
                """),
        Migration("decisions by the reminder id's bytes", recordIDBytes(of: "reminder_id", in: "decision") + [.only(.sqlite, """
                CREATE TABLE decision_by_bytes (reminder_id BLOB NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO decision_by_bytes
                    SELECT \(idBytes("reminder_id")), at_ms, status, cause, day, local_minute FROM decision
                    WHERE \(idBytes("reminder_id")) IS NOT NULL;
                DROP TABLE decision;
                ALTER TABLE decision_by_bytes RENAME TO decision;
                DROP TABLE temp.record_id_bytes;
                """)]),
    ], eventTypes: [Events.reminderDue.name, Events.reminderSuppressed.name, Events.reminderSkipped.name, Events.reminderMissed.name], replay: { _, data, sql in
        guard let decided = decision(in: data) else { return }
        _ = try decide(decided.reminderId, PlannedOccurrence(decided), status: decided.status, cause: decided.cause, sql)
    })
}
