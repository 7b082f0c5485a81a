import Foundation
import GRDB
import LHTSchema
import PostgresStorage
import ReminderPlanning
@testable import ReminderPlanner
import ServiceHost
import SQLiteStorage
import Storage
import Testing
import TestSupport

/// The planner's tables are written twice: SQLite's by their migration history (which existing files
/// run through unchanged), PostgreSQL's as they are now (`PlannerStore.tables`). The two must agree,
/// column for column, or a statement written once for both would mean different things.
@Suite struct PlannerStoreLayoutTests {
    /// A column as both backends can tell it: its name, integer, text or bytes, NOT NULL, in the primary key.
    struct Column: Equatable, CustomStringConvertible {
        let name: String, type: String, notNull: Bool, key: Bool
        var description: String { "\(name) \(type)\(notNull ? " not null" : "")\(key ? " key" : "")" }
    }

    /// SQLite's type affinity of a declared type (BIGINT and INTEGER alike).
    static func affinity(_ declared: String) -> String {
        let type = declared.uppercased()
        if type.contains("INT") { return "integer" }
        if type.contains("TEXT") || type.contains("CHAR") { return "text" }
        return type.contains("BLOB") || type.isEmpty ? "bytes" : type
    }

    static func sqliteColumns(_ db: Database, _ schema: String, _ table: String) throws -> [Column] {
        try Row.fetchAll(db, sql: "PRAGMA \(schema).table_info(\"\(table)\")").map { row in
            Column(name: row["name"], type: affinity(row["type"]), notNull: (row["notnull"] as Int) != 0, key: (row["pk"] as Int) > 0)
        }
    }

    static func sqliteIndex(_ db: Database, _ schema: String, _ index: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?, ?) ORDER BY seqno", arguments: [index, schema])
    }

    static func postgresColumns(_ connection: PostgresConnection, _ table: String) throws -> [Column] {
        let key = Set(try connection.execute("""
            SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = ('reminder_planner.' || quote_ident($1))::regclass AND i.indisprimary
            """, [.text(table)]).compactMap { $0.text(0) })
        return try connection.execute("""
            SELECT column_name, data_type, is_nullable FROM information_schema.columns
            WHERE table_schema = 'reminder_planner' AND table_name = $1 ORDER BY ordinal_position
            """, [.text(table)]).map { row in
            let type = switch row.text(1) {
            case "integer", "bigint": "integer"
            case "text": "text"
            case "bytea": "bytes"
            default: row.text(1) ?? "?"
            }
            return Column(name: row.text(0) ?? "?", type: type, notNull: row.text(2) == "NO", key: key.contains(row.text(0) ?? ""))
        }
    }

    /// The planner's store as the host makes it from the planner's layout, on either backend.
    static func host(dataDirectory: URL, database: String? = nil) throws -> ServiceHost {
        try ServiceHost(service: .reminderPlanner, apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                        dataDirectory: dataDirectory, database: database, layout: PlannerStore.layout, logger: quietLogger("layout"))
    }

    @Test func sqlitesMigratedTablesAndPostgreSQLsAreTheSame() throws {
        // What `tables` says, as SQLite reads it.
        let expected = try DatabaseQueue()
        let names = try expected.write { db in
            for statement in PlannerStore.tables(.sqlite) { try db.execute(sql: statement) }
            return try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        }
        let projected: Set = ["decision", "session", "noalc_day", "latest_session_end"]
        #expect(Set(names) == projected.union(["user", "reminder", "restored", "announced", "planner_state", "moved_decided_day",
                                                           "decided_through", "changed_user"]))

        // A planner's SQLite files, made by the migrations (the log's file and the projection's).
        let scratch = ScratchDirectory("lht-planner-layout")
        let directory = scratch.subdirectory(ServiceName.reminderPlanner.rawValue).path
        try Self.host(dataDirectory: URL(fileURLWithPath: directory)).store.close()
        let files = try DatabaseQueue(path: directory + "/reminder-planner.sqlite")
        try files.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS projection", arguments: [directory + "/reminder-planner.projection.sqlite"])
            try db.execute(sql: "ATTACH DATABASE ? AS decisions", arguments: [directory + "/reminder-planner.decisions.sqlite"])
        }

        // A planner's PostgreSQL schema, made by its PostgreSQL migrations.
        let server = try TestPostgres()
        try Self.host(dataDirectory: URL(fileURLWithPath: directory), database: server.url).store.close()
        let connection = try server.connect()

        for table in names {
            let wanted = try expected.read { try Self.sqliteColumns($0, "main", table) }
            let file = table == "decision" ? "decisions" : projected.contains(table) ? "projection" : "main"
            let inFile = try files.read { try Self.sqliteColumns($0, file, table) }
            #expect(inFile == wanted, "SQLite \(table)")
            var inPostgres = try Self.postgresColumns(connection, table)
            if table == "noalc_day" {
                // SQLite's rowid, the order the days were stored in, is a column of that name there.
                #expect(inPostgres.first { $0.name == "rowid" } == Column(name: "rowid", type: "integer", notNull: true, key: false))
                inPostgres.removeAll { $0.name == "rowid" }
            }
            #expect(inPostgres == wanted, "PostgreSQL \(table)")
        }
        #expect(try files.read { try Self.sqliteIndex($0, "projection", "session_by_user_start") } == ["user_id", "activity", "start_ms"])
        let index = try connection.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = 'reminder_planner' AND indexname = 'session_by_user_start'")
        #expect(index.first?.text(0)?.hasSuffix("(user_id, activity, start_ms)") == true, "\(index.map(\.columns))")
        // SQLite-only: the view for people reading the file.
        #expect(try files.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'view' AND name = 'reminder_fields'") } == 1)
        #expect(PlannerStore.layout.partitioned)
        try files.close()
    }

    /// A projection file in memory, migrated up to `migration`, with the copies `sessions` (SQL rows
    /// of id, user, activity, start, end and seq); and the migrator, for the rest.
    static func projection(upTo migration: String, sessions: String) throws -> (DatabaseQueue, DatabaseMigrator) {
        let database = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        migrator.register(PlannerStore.projection.migrations)
        try migrator.migrate(database, upTo: migration)
        try database.write { db in try db.execute(sql: "INSERT INTO session (id, user_id, activity, start_ms, end_ms, seq) VALUES \(sessions)") }
        return (database, migrator)
    }

    /// The copies of the logger's sessions are keyed by its seq (`PlannerStore.sessionsBySeq`): a
    /// projection file from before keeps its copies through the migration; a repeated event changes
    /// nothing; a session of another history at a seq the copies hold takes its place.
    @Test func sessionCopiesAreKeyedByTheLoggersSeq() throws {
        let (database, migrator) = try Self.projection(upTo: "decisions and copies", sessions: """
            ('\(RecordID())', 'ada', 'mindfulness', 0, 600000, 1), ('\(RecordID())', 'ada', 'mindfulness', 3600000, 4200000, 2)
            """)
        try migrator.migrate(database)
        try database.write { db throws in
            #expect(try Self.sqliteColumns(db, "main", "session").filter(\.key).map(\.name) == ["seq"])
            let sql = SQLiteStoreConnection(db)
            func candidates() throws -> [Int64] {
                try PlannerStore.sessionCandidates(user: UserID("ada")!, activity: .mindfulness, from: Instant(secondsSince1970: 7200),
                                                   through: Instant(secondsSince1970: 7200), lookbackHours: 12, sql).map(\.loggedOrder).sorted()
            }
            #expect(try candidates() == [1, 2])
            let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: Instant(secondsSince1970: 5000),
                                        end: Instant(secondsSince1970: 5600), source: nil, loggedAt: Instant(secondsSince1970: 5600))
            #expect(try PlannerStore.insert(session: session, seq: 3, sql))
            #expect(try !PlannerStore.insert(session: session, seq: 3, sql), "the same event again")
            // Another history's session 2 (`--accept-upstream-reset`).
            let other = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: Instant(secondsSince1970: 6000),
                                      end: Instant(secondsSince1970: 6600), source: nil, loggedAt: Instant(secondsSince1970: 6600))
            #expect(try PlannerStore.insert(session: other, seq: 2, sql))
            #expect(try candidates() == [1, 2, 3])
            #expect(try String.fetchOne(db, sql: "SELECT id FROM session WHERE seq = 2") == other.id.description)
        }
    }

    /// What the start reads for `LatestLogged`: each user's latest session end by activity, filled
    /// from the copies by the migration and raised, never lowered, by every copy stored after it.
    @Test func latestSessionEndsAreFilledOnceAndRaisedWithEachCopy() throws {
        let (database, migrator) = try Self.projection(upTo: "decisions behind the log", sessions: """
            ('\(RecordID())', 'ada', 'mindfulness', 5000, 6000, 1), ('\(RecordID())', 'ada', 'mindfulness', 9000, 9500, 2),
            ('\(RecordID())', 'ada', 'workout', 7000, 8000, 3), ('\(RecordID())', 'bo', 'workout', 100, 200, 4)
            """)
        try migrator.migrate(database)
        try database.write { db throws in
            let sql = SQLiteStoreConnection(db)
            func latestLogged() throws -> [UserID: LatestLogged] {
                var latest: [UserID: LatestLogged] = [:]
                try PlannerStore.forEachLatestSessionEnd(sql) { latest[$0, default: LatestLogged()].logged(sessionOf: $1, endingAt: $2) }
                return latest
            }
            func latest(_ user: String) throws -> LatestLogged? { try latestLogged()[UserID(user)!] }
            func ended(_ user: String, _ activity: Activity, _ end: Int64) throws -> Bool {
                guard let latest = try latest(user) else { return false }
                return latest.maySessionEnd(activity, atOrAfter: end) && !latest.maySessionEnd(activity, atOrAfter: end + 1)
            }
            #expect(try latestLogged().count == 2)
            #expect(try ended("ada", .mindfulness, 9500) && ended("ada", .workout, 8000) && ended("bo", .workout, 200))
            #expect(try latest("bo")?.maySessionEnd(.mindfulness, atOrAfter: .min + 1) == false)

            func session(_ user: String, ending end: Int64) -> StoredSession {
                StoredSession(id: RecordID(), userId: UserID(user)!, activity: .mindfulness, start: Instant(millisecondsSince1970: end - 600),
                              end: Instant(millisecondsSince1970: end), source: nil, loggedAt: Instant(millisecondsSince1970: end))
            }
            let later = session("ada", ending: 12_000)
            #expect(try PlannerStore.insert(session: later, seq: 5, sql) && ended("ada", .mindfulness, 12_000))
            #expect(try PlannerStore.insert(session: session("ada", ending: 3000), seq: 6, sql) && ended("ada", .mindfulness, 12_000),
                    "a session that ended earlier leaves it")
            // Another history's session 5 replaces the copy, and the bound stays above what is stored.
            #expect(try PlannerStore.insert(session: session("ada", ending: 4000), seq: 5, sql) && ended("ada", .mindfulness, 12_000))
            #expect(try PlannerStore.insert(session: session("cy", ending: 50), seq: 7, sql) && ended("cy", .mindfulness, 50))
        }
    }

    /// Decisions live in a file of their own that a thread applies behind the log (`PlannerStore.decisionProjection`),
    /// in their key's b-tree (`WITHOUT ROWID`): one b-tree written per decision, not a table and its
    /// key's index. The projection file drops the table it held them in (they come back from the log
    /// into the new file), and an occurrence decided is still never decided twice.
    @Test func decisionsAreStoredInTheirKeysBTreeInAFileOfTheirOwn() throws {
        let projection = try DatabaseQueue()
        var projectionMigrator = DatabaseMigrator()
        projectionMigrator.register(PlannerStore.projection.migrations)
        try projectionMigrator.migrate(projection, upTo: "decisions in their key's b-tree")
        #expect(try projection.read { try $0.tableExists("decision") })
        try projectionMigrator.migrate(projection)
        #expect(try projection.read { try !$0.tableExists("decision") })

        let database = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        migrator.register(PlannerStore.decisionProjection.migrations)
        let reminder = RecordID(), at = Instant(secondsSince1970: 1_780_000_000)
        let planned = PlannedOccurrence(day: LocalDay(year: 2026, month: 5, day: 28)!, weekday: .thu, at: at, localTime: LocalTime(hour: 22, minute: 26)!)
        try migrator.migrate(database)
        try database.write { db throws in
            #expect(try PlannerStore.decide(reminder, planned, status: .fired, cause: nil, SQLiteStoreConnection(db)))
        }
        try database.write { db throws in
            let sql = SQLiteStoreConnection(db)
            #expect(try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'decision'")?.hasSuffix("WITHOUT ROWID") == true)
            #expect(try PlannerStore.decisions(of: reminder, from: at, through: at, sql)[at.millisecondsSince1970]?.status == .fired)
            #expect(try !PlannerStore.decide(reminder, planned, status: .missed, cause: nil, sql), "decided before")
            let next = PlannedOccurrence(day: planned.day.adding(days: 1), weekday: .fri, at: at.adding(seconds: 86_400), localTime: planned.localTime)
            #expect(try PlannerStore.decide(reminder, next, status: .suppressed, cause: RecordID(), sql))
            #expect(try PlannerStore.decisions(of: reminder, from: at, through: next.at, sql).count == 2)
        }
    }
}
