import Foundation
import GRDB
import LHTSchema
import PostgresStorage
import ReminderPlanner
import ReminderPlanning
import Storage

/// The burst's data for `bench cluster`: users in UTC, each with `perUser` daily reminders at the
/// burst's minute, stored as the planner stores them, and every partition decided through now (so
/// that a planner started on it has nothing behind it to catch up on).
enum ClusterBurstSeed {
    static func rule(at due: Instant) -> StoredRule {
        let minute = due.local(in: ZoneID.utc).minuteOfDay
        return StoredRule(activity: .workout, time: LocalTime(hour: minute / 60, minute: minute % 60)!, weekdays: WeekdayMask(bits: 127),
                          lookbackHours: 12, enabled: true)
    }

    /// Into the planner's SQLite file (made by a planner's start), in one transaction.
    static func sqlite(directory: String, users: Int, perUser: Int, due: Instant) throws {
        let database = try DatabaseQueue(path: directory + "/reminder-planner.sqlite")
        let bits = rule(at: due).bits, now = Instant.now().millisecondsSince1970
        try database.write { db in
            for user in 0..<users {
                try db.run("INSERT INTO user (user_id, time_zone, locale, paused) VALUES (?, 'UTC', 'en', 0)", arguments: ["u\(user)"])
                for _ in 0..<perUser {
                    try db.run("INSERT INTO reminder (id, user_id, rule, title, body, created_at_ms) VALUES (?, ?, ?, NULL, NULL, ?)",
                               arguments: [RecordID().bytes, "u\(user)", bits, PlannerBenchmark.seededCreatedMs])
                }
            }
            try db.run("UPDATE decided_through SET at_ms = ?", arguments: [now])
        }
        try database.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
    }

    /// Into the planner's PostgreSQL schema (made by a planner's start), multi-row INSERTs of
    /// `PlannerPostgresBenchmark.batch` rows.
    static func postgres(_ connection: PostgresConnection, users: Int, perUser: Int, due: Instant) throws {
        let batch = PlannerPostgresBenchmark.batch, bits = rule(at: due).bits
        for first in stride(from: 0, to: users, by: batch) {
            let rows = (first..<min(first + batch, users)).map { "('u\($0)', 'UTC', 'en', 0)" }
            try connection.execute(#"INSERT INTO reminder_planner."user" (user_id, time_zone, locale, paused) VALUES "# + rows.joined(separator: ", "))
        }
        let reminders = (0..<users).flatMap { user in (0..<perUser).map { _ in user } }
        for first in stride(from: 0, to: reminders.count, by: batch) {
            let rows = reminders[first..<min(first + batch, reminders.count)].map {
                "(uuid_send('\(RecordID())'), 'u\($0)', \(bits), NULL, NULL, \(PlannerBenchmark.seededCreatedMs))"
            }
            try connection.execute("INSERT INTO reminder_planner.reminder (id, user_id, rule, title, body, created_at_ms) VALUES "
                                   + rows.joined(separator: ", "))
        }
        try connection.execute("UPDATE reminder_planner.decided_through SET at_ms = $1::bigint", [.integer(Instant.now().millisecondsSince1970)])
        try connection.execute(#"VACUUM ANALYZE reminder_planner.reminder, reminder_planner."user""#)
    }

    /// The next whole minute at least `lead` seconds from now.
    static func instant(atLeast lead: Int64) -> Instant {
        let now = Instant.now().adding(seconds: lead).millisecondsSince1970
        return Instant(millisecondsSince1970: now - now % 60_000 + 60_000)
    }
}
