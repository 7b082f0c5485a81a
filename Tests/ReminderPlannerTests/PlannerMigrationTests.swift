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

/// Tables migrated to their keys for locality keep every row that can still be asked for.
extension PlannerStoreLayoutTests {
    static let announcedAt = Instant(secondsSince1970: 1_780_000_000)

    /// Announced cancellations from before `PlannerStore.announcementsByUser`, keyed by the reminder
    /// id's text, after its migration: keyed by user (in their key's b-tree on SQLite), `reminder`'s
    /// kept with its cause and not announced again, the row of a reminder that is gone not kept.
    static func expectAnnouncementsMigrated(_ reminder: Reminder, cause: RecordID, _ sql: StoreConnection) throws {
        #expect(try PlannerStore.announced(of: reminder, sql) == [announcedAt.millisecondsSince1970: cause])
        #expect(try !PlannerStore.announce(reminder, at: announcedAt, cause: RecordID(), sql), "announced before the migration")
        #expect(try PlannerStore.announce(reminder, at: announcedAt.adding(seconds: 86_400), cause: cause, sql))
        #expect(try sql.rows("SELECT user_id FROM announced", []) { $0.text(0) } == [reminder.userId.rawValue, reminder.userId.rawValue],
                "the row of a reminder that is gone")
    }

    static func reminder(of user: String) -> Reminder {
        Reminder(id: RecordID(), userId: UserID(user)!, activity: .workout, time: LocalTime(hour: 9, minute: 0)!, weekdays: Weekday.allCases,
                 lookbackHours: 12, enabled: true, title: nil, body: nil, createdAt: announcedAt.adding(seconds: -86_400))
    }

    @Test func sqlitesAnnouncementsAreKeyedByUserAfterTheMigration() throws {
        let database = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        migrator.register(EventLog.sqliteMigrations)
        migrator.register(PlannerStore.sqliteMigrations)
        try migrator.migrate(database, upTo: PlannerStore.partitionsMigration.name)
        let reminder = Self.reminder(of: "ada"), cause = RecordID()
        try database.write { db in
            try PlannerStore.save(reminder, SQLiteStoreConnection(db))
            try db.execute(sql: "INSERT INTO announced (reminder_id, at_ms, cause) VALUES (?, ?, ?), (?, ?, ?)", arguments: [
                reminder.id.description, Self.announcedAt.millisecondsSince1970, cause.description,
                RecordID().description, Self.announcedAt.millisecondsSince1970, cause.description])
        }
        try migrator.migrate(database)
        try database.write { db in
            #expect(try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'announced'")?.hasSuffix("WITHOUT ROWID") == true)
            try Self.expectAnnouncementsMigrated(reminder, cause: cause, SQLiteStoreConnection(db))
        }
    }

    @Test func postgreSQLsAnnouncementsAreKeyedByUserAfterTheMigration() throws {
        let server = try TestPostgres()
        let migrations = try #require(PlannerStore.layout.postgresMigrations)
        func open(_ migrations: [Migration]) throws -> PostgresStore {
            try PostgresStore(url: server.url, service: ServiceName.reminderPlanner.rawValue, migrations: migrations, partitioned: true,
                              logger: quietLogger("store"))
        }
        let reminder = Self.reminder(of: "ada"), cause = RecordID()
        let before = try open(migrations.filter { $0.name != PlannerStore.announcementsByUser.name })
        try before.write(now: Self.announcedAt, copyOfUpstream: false, { tx in
            try PlannerStore.save(reminder, tx.sql)
            for id in [reminder.id.description, RecordID().description, "not-an-id"] {
                try tx.sql.execute("INSERT INTO announced (reminder_id, at_ms, cause) VALUES (?, ?, ?)",
                                   [.text(id), .integer(Self.announcedAt.millisecondsSince1970), .text(cause.description)])
            }
        }, committed: { _ in })
        before.close()
        let after = try open(migrations)
        defer { after.close() }
        try after.write(now: Self.announcedAt, copyOfUpstream: false, { tx in
            try Self.expectAnnouncementsMigrated(reminder, cause: cause, tx.sql)
        }, committed: { _ in })
    }

    /// The decisions' file keys a decision by the reminder id's 16 bytes; a file from before, keyed by
    /// its text, is migrated with every row (a row whose id is not one cannot be asked for, and goes).
    @Test func decisionsKeyedByTheReminderIdsTextAreKeyedByItsBytesAfterTheMigration() throws {
        let database = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        migrator.register(PlannerStore.decisionProjection.migrations)
        try migrator.migrate(database, upTo: "decisions")
        let reminder = RecordID(), at = Instant(secondsSince1970: 1_780_000_000), cause = RecordID()
        try database.write { db in
            try db.execute(sql: "INSERT INTO decision VALUES (?, ?, 'suppressed', ?, 20602, 1346)",
                           arguments: [reminder.description, at.millisecondsSince1970, cause.description])
            try db.execute(sql: "INSERT INTO decision VALUES ('not-an-id', 1, 'fired', NULL, NULL, NULL)")
        }
        try migrator.migrate(database)
        try database.write { db throws in
            let sql = SQLiteStoreConnection(db)
            #expect(try String.fetchAll(db, sql: "SELECT typeof(reminder_id) FROM decision") == ["blob"])
            let recorded = try #require(try PlannerStore.decisions(of: reminder, from: at, through: at, sql)[at.millisecondsSince1970])
            #expect(recorded.status == .suppressed && recorded.cause == cause)
            #expect(recorded.occurrence?.day.ordinal == 20602 && recorded.occurrence?.localTime == LocalTime(hour: 22, minute: 26))
            let planned = try #require(recorded.occurrence)
            #expect(try !PlannerStore.decide(reminder, planned, status: .fired, cause: nil, sql), "decided before the migration")
        }
    }
}
