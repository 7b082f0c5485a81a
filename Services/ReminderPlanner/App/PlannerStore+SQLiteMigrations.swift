import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// SQLite's history of the planner's tables: its migrations, one per change, never edited.
extension PlannerStore {
    static let sqliteMigrations: [Migration] = [
        .sqlite("planner", """
                CREATE TABLE user (user_id TEXT PRIMARY KEY NOT NULL, time_zone TEXT NOT NULL, locale TEXT NOT NULL, paused INTEGER NOT NULL);
                CREATE TABLE reminder (
                    id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, time TEXT NOT NULL,
                    weekdays TEXT NOT NULL, lookback_hours INTEGER NOT NULL, enabled INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms);
                CREATE TABLE noalc_day (user_id TEXT NOT NULL, day TEXT NOT NULL, entry_id TEXT NOT NULL, PRIMARY KEY (user_id, day));
                CREATE TABLE decision (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, status TEXT NOT NULL, cause TEXT,
                    PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE restored (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE announced (reminder_id TEXT NOT NULL, at_ms INTEGER NOT NULL, cause TEXT NOT NULL, PRIMARY KEY (reminder_id, at_ms));
                CREATE TABLE planner_state (key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
                """),
        // A reminder row as loading reads it fastest: the id as its 16 bytes, the time as minutes since
        // midnight, the weekdays as a mask (bit n: `Weekday.index` n): no text to parse at start,
        // and half the space.
        // A row whose id does not parse was never loaded either: it is not carried over.
        Migration("reminder-compact-rows", recordIDBytes(of: "id", in: "reminder") + [.only(.sqlite, """
                CREATE TABLE reminder_compact (
                    id BLOB PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, minute_of_day INTEGER NOT NULL,
                    weekday_mask INTEGER NOT NULL, lookback_hours INTEGER NOT NULL, enabled INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                INSERT INTO reminder_compact
                    SELECT \(idBytes("id")), user_id, activity,
                           CAST(substr(time, 1, 2) AS INTEGER) * 60 + CAST(substr(time, 4, 2) AS INTEGER), \(weekdayBits),
                           lookback_hours, enabled, title, body, created_at_ms
                    FROM reminder WHERE \(idBytes("id")) IS NOT NULL ORDER BY rowid;
                DROP TABLE reminder;
                ALTER TABLE reminder_compact RENAME TO reminder;
                DROP TABLE temp.record_id_bytes;
                """)]),
        // The small fields as one column (`StoredRule`), with a view that shows them as columns.
        .sqlite("reminder-rule-column", """
                CREATE TABLE reminder_rule (
                    id BLOB PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, rule INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                INSERT INTO reminder_rule
                    SELECT id, user_id, \(StoredRule.sqlFromColumns), title, body, created_at_ms
                    FROM reminder WHERE \(StoredRule.sqlValidColumns) ORDER BY rowid;
                DROP TABLE reminder;
                ALTER TABLE reminder_rule RENAME TO reminder;
                CREATE VIEW reminder_fields AS SELECT id, user_id, \(StoredRule.sqlColumns), title, body, created_at_ms FROM reminder;
                """),
        // A decision remembers its rule day and local time: after new zone rules move that day's
        // instant, the day is still known as decided (NULL in decisions taken before).
        .sqlite("decision-rule-day", """
            ALTER TABLE decision ADD COLUMN day INTEGER;
            ALTER TABLE decision ADD COLUMN local_minute INTEGER;
            """),
        // `ReminderPlanner.movedDecidedDays`, stored with the step that planned again: a restart
        // before a moved day's new instant must not decide it again.
        .sqlite("moved-decided-day", "CREATE TABLE moved_decided_day (reminder_id TEXT PRIMARY KEY NOT NULL, day INTEGER NOT NULL, until_ms INTEGER NOT NULL)"),
        .sqlite("decisions and copies are a projection", """
            DROP TABLE main.decision; DROP TABLE main.session; DROP TABLE main.noalc_day;
            DELETE FROM main.cursor WHERE upstream = '\(ServiceName.sessionLogger.rawValue)'
            """),
        partitionsMigration,
        // `announcementsByUser`, in its key's b-tree. A row whose reminder is gone was never read again.
        Migration(announcementsByUser.name, recordIDBytes(of: "reminder_id", in: "announced") + [.only(.sqlite, """
                CREATE TABLE announced_by_user (user_id TEXT NOT NULL, reminder_id BLOB NOT NULL, at_ms INTEGER NOT NULL, cause TEXT NOT NULL,
                    PRIMARY KEY (user_id, reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO announced_by_user
                    SELECT reminder.user_id, reminder.id, announced.at_ms, announced.cause
                    FROM announced JOIN reminder ON reminder.id = \(idBytes("announced.reminder_id"));
                DROP TABLE announced;
                ALTER TABLE announced_by_user RENAME TO announced;
                DROP TABLE temp.record_id_bytes;
                """)]),
    ]


    private static let weekdayBits = Weekday.allCases.map { "((instr(weekdays, '\($0.rawValue)') > 0) << \($0.index))" }.joined(separator: " | ")

    /// A data step for SQLite, which has no function for a record id's bytes: `temp.record_id_bytes`
    /// maps each text of `column` in `table` that is a record id to its 16 bytes, for the SQL after
    /// it (`idBytes`), which drops the table again.
    static func recordIDBytes(of column: String, in table: String) -> [Migration.Step] {
        [.only(.sqlite, "CREATE TEMP TABLE record_id_bytes (text TEXT PRIMARY KEY NOT NULL, bytes BLOB NOT NULL)"), .data { sql in
            let ids = try sql.rows("SELECT DISTINCT \(column) FROM \(table)", []) { row in
                row.text(0).flatMap { text in RecordID(text).map { (text, $0.bytes) } }
            }
            for (text, bytes) in ids { try sql.execute("INSERT INTO temp.record_id_bytes (text, bytes) VALUES (?, ?)", [.text(text), .blob(bytes)]) }
        }]
    }

    /// The 16 bytes of the record id whose text `expression` is, NULL for text that is not one (`recordIDBytes`).
    static func idBytes(_ expression: String) -> String { "(SELECT bytes FROM temp.record_id_bytes WHERE text = \(expression))" }
}
