import Foundation
import GRDB
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// SQLite's history of the planner's tables: its migrations, one per change, never edited.
extension PlannerStore {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("planner") { db in
            try db.execute(sql: """
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
                """)
        }
        // A reminder row as loading reads it fastest: the id as its 16 bytes, the time as minutes since
        // midnight, the weekdays as a mask (bit n: `Weekday.index` n): no text to parse at start,
        // and half the space.
        migrator.registerMigration("reminder-compact-rows") { db in
            db.add(function: recordIDBytes)
            defer { db.remove(function: recordIDBytes) }
            let weekdayBits = Weekday.allCases.map { "((instr(weekdays, '\($0.rawValue)') > 0) << \($0.index))" }.joined(separator: " | ")
            // A row whose id does not parse was never loaded either: it is not carried over.
            try db.execute(sql: """
                CREATE TABLE reminder_compact (
                    id BLOB PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, minute_of_day INTEGER NOT NULL,
                    weekday_mask INTEGER NOT NULL, lookback_hours INTEGER NOT NULL, enabled INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                INSERT INTO reminder_compact
                    SELECT lht_record_id_bytes(id), user_id, activity,
                           CAST(substr(time, 1, 2) AS INTEGER) * 60 + CAST(substr(time, 4, 2) AS INTEGER), \(weekdayBits),
                           lookback_hours, enabled, title, body, created_at_ms
                    FROM reminder WHERE lht_record_id_bytes(id) IS NOT NULL ORDER BY rowid;
                DROP TABLE reminder;
                ALTER TABLE reminder_compact RENAME TO reminder;
                """)
        }
        // The small fields as one column (`StoredRule`), with a view that shows them as columns.
        migrator.registerMigration("reminder-rule-column") { db in
            try db.execute(sql: """
                CREATE TABLE reminder_rule (
                    id BLOB PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, rule INTEGER NOT NULL,
                    title TEXT, body TEXT, created_at_ms INTEGER NOT NULL);
                INSERT INTO reminder_rule
                    SELECT id, user_id, \(StoredRule.sqlFromColumns), title, body, created_at_ms
                    FROM reminder WHERE \(StoredRule.sqlValidColumns) ORDER BY rowid;
                DROP TABLE reminder;
                ALTER TABLE reminder_rule RENAME TO reminder;
                CREATE VIEW reminder_fields AS SELECT id, user_id, \(StoredRule.sqlColumns), title, body, created_at_ms FROM reminder;
                """)
        }
        // A decision remembers its rule day and local time: after new zone rules move that day's
        // instant, the day is still known as decided (NULL in decisions taken before).
        migrator.registerMigration("decision-rule-day") { db in
            try db.execute(sql: """
                ALTER TABLE decision ADD COLUMN day INTEGER;
                ALTER TABLE decision ADD COLUMN local_minute INTEGER;
                """)
        }
        // `ReminderPlanner.movedDecidedDays`, stored with the step that planned again: a restart
        // before a moved day's new instant must not decide it again.
        migrator.registerMigration("moved-decided-day") { db in
            try db.execute(sql: "CREATE TABLE moved_decided_day (reminder_id TEXT PRIMARY KEY NOT NULL, day INTEGER NOT NULL, until_ms INTEGER NOT NULL)")
        }
        migrator.registerMigration("decisions and copies are a projection") { db in
            try db.execute(sql: """
                DROP TABLE main.decision; DROP TABLE main.session; DROP TABLE main.noalc_day;
                DELETE FROM main.cursor WHERE upstream = '\(ServiceName.sessionLogger.rawValue)'
                """)
        }
        migrator.registerMigration(partitionsMigration.name) { db in
            for statement in partitionsMigration.statements { try db.execute(sql: statement) }
        }
        // `announcementsByUser`, in its key's b-tree. A row whose reminder is gone was never read again.
        migrator.registerMigration(announcementsByUser.name) { db in
            db.add(function: recordIDBytes)
            defer { db.remove(function: recordIDBytes) }
            try db.execute(sql: """
                CREATE TABLE announced_by_user (user_id TEXT NOT NULL, reminder_id BLOB NOT NULL, at_ms INTEGER NOT NULL, cause TEXT NOT NULL,
                    PRIMARY KEY (user_id, reminder_id, at_ms)) WITHOUT ROWID;
                INSERT INTO announced_by_user
                    SELECT reminder.user_id, reminder.id, announced.at_ms, announced.cause
                    FROM announced JOIN reminder ON reminder.id = lht_record_id_bytes(announced.reminder_id);
                DROP TABLE announced;
                ALTER TABLE announced_by_user RENAME TO announced;
                """)
        }
    }

    /// `lht_record_id_bytes(text)`: a record id's 16 bytes, NULL for text that is not one; for migrations.
    static let recordIDBytes = DatabaseFunction("lht_record_id_bytes", argumentCount: 1, pure: true) { values in
        String.fromDatabaseValue(values[0]).flatMap(RecordID.init)?.bytes
    }
}
