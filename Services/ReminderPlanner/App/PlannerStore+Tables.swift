import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// The tables as they are now, in SQL both backends take.
extension PlannerStore {
    /// The tables as SQLite's migrations and projection leave them, in SQL both backends take
    /// (`BIGINT` is an integer column to SQLite). PostgreSQL creates them from here; SQLite's come
    /// from its migration history, and a test checks that they agree (`PlannerStoreLayoutTests`).
    /// `user` is quoted everywhere: a reserved word to PostgreSQL. SQLite's `noalc_day` has a
    /// `rowid`, the order the planner stored the days in (`noalcCandidates`): PostgreSQL gets an
    /// identity column of that name.
    static func tables(_ dialect: SQLDialect) -> [String] {
        firstTables(dialect, sessionsBySeq: true, decisionsByBytes: true, announcementsByUser: true)
            + (partitionsMigration.statements(for: dialect) + latestSessionEnds.statements(for: dialect)).filter { $0.hasPrefix("CREATE") }
    }

    /// The tables of PostgreSQL's first migration; with `sessionsBySeq`, `decisionsByBytes` and
    /// `announcementsByUser`, as those migrations leave them.
    static func firstTables(_ dialect: SQLDialect, sessionsBySeq: Bool = false, decisionsByBytes: Bool = false,
                                    announcementsByUser: Bool = false) -> [String] {
        let storedOrder = dialect == .postgres ? "rowid BIGINT GENERATED ALWAYS AS IDENTITY, " : ""
        return [
            """
            CREATE TABLE "user" (user_id TEXT PRIMARY KEY NOT NULL, time_zone TEXT NOT NULL, locale TEXT NOT NULL, paused INTEGER NOT NULL)
            """,
            """
            CREATE TABLE reminder (
                id \(dialect.bytesType) PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, rule BIGINT NOT NULL,
                title TEXT, body TEXT, created_at_ms BIGINT NOT NULL)
            """,
            """
            CREATE TABLE restored (reminder_id TEXT NOT NULL, at_ms BIGINT NOT NULL, PRIMARY KEY (reminder_id, at_ms))
            """,
            announcementsByUser ? """
            CREATE TABLE announced (user_id TEXT NOT NULL, reminder_id \(dialect.bytesType) NOT NULL, at_ms BIGINT NOT NULL, cause TEXT NOT NULL,
                PRIMARY KEY (user_id, reminder_id, at_ms))
            """ : """
            CREATE TABLE announced (reminder_id TEXT NOT NULL, at_ms BIGINT NOT NULL, cause TEXT NOT NULL, PRIMARY KEY (reminder_id, at_ms))
            """,
            "CREATE TABLE planner_state (key TEXT PRIMARY KEY NOT NULL, value BIGINT NOT NULL)",
            "CREATE TABLE moved_decided_day (reminder_id TEXT PRIMARY KEY NOT NULL, day INTEGER NOT NULL, until_ms BIGINT NOT NULL)",
            // SQLite's projection file.
            """
            CREATE TABLE decision (reminder_id \(decisionsByBytes ? dialect.bytesType : "TEXT") NOT NULL, at_ms BIGINT NOT NULL, status TEXT NOT NULL,
                cause TEXT, day INTEGER, local_minute INTEGER, PRIMARY KEY (reminder_id, at_ms))
            """,
            """
            CREATE TABLE session (id TEXT \(sessionsBySeq ? "" : "PRIMARY KEY ")NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                start_ms BIGINT NOT NULL, end_ms BIGINT NOT NULL, seq BIGINT \(sessionsBySeq ? "PRIMARY KEY " : "")NOT NULL)
            """,
            "CREATE INDEX session_by_user_start ON session (user_id, activity, start_ms)",
            "CREATE TABLE noalc_day (user_id TEXT NOT NULL, day TEXT NOT NULL, entry_id TEXT NOT NULL, \(storedOrder)PRIMARY KEY (user_id, day))",
        ]
    }
}
