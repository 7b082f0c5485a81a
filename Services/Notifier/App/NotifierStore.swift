import Foundation
import GRDB
import LHTSchema
import ServiceHost

/// The notifier's tables. A notification is stored as the JSON it was published with, so
/// `notification.list` returns those bytes without decoding them.
enum NotifierStore {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("notifications") { db in
            // notification_id is the unique key that makes an occurrence notified at most once;
            // NOCASE because ids are compared case-insensitively (PROTOCOL "Value formats").
            try db.execute(sql: """
                CREATE TABLE notification (
                    notification_id TEXT NOT NULL COLLATE NOCASE PRIMARY KEY, seq INTEGER NOT NULL UNIQUE,
                    user_id TEXT NOT NULL, activity TEXT NOT NULL, scheduled_for_ms INTEGER NOT NULL,
                    test INTEGER NOT NULL, body BLOB NOT NULL);
                CREATE INDEX notification_by_user ON notification (user_id, seq);
                CREATE INDEX notification_last_sent ON notification (user_id, activity, test, seq);
                CREATE TABLE rate_limited (
                    notification_id TEXT NOT NULL COLLATE NOCASE PRIMARY KEY, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                    scheduled_for_ms INTEGER NOT NULL, last_sent_ms INTEGER NOT NULL);
                """)
        }
        // The cursor lives in the projection file now (`Projection.cursorsOnly`): read again once, changing nothing.
        migrator.registerMigration("cursor in the projection file") { db in try db.execute(sql: "DELETE FROM main.cursor") }
    }

    /// Whether this occurrence was notified or dropped before: either way it is never notified again.
    static func isDecided(_ notificationId: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: """
            SELECT EXISTS (SELECT 1 FROM notification WHERE notification_id = ?1)
                OR EXISTS (SELECT 1 FROM rate_limited WHERE notification_id = ?1)
            """, arguments: [notificationId]) ?? false
    }

    /// The occurrence instant of the user's last notification sent for `activity`, tests aside.
    static func lastSent(user: UserID, activity: Activity, _ db: Database) throws -> Instant? {
        try Int64.fetchOne(db, sql: """
            SELECT scheduled_for_ms FROM notification WHERE user_id = ? AND activity = ? AND test = 0 ORDER BY seq DESC LIMIT 1
            """, arguments: [user.rawValue, activity.rawValue]).map(Instant.init(millisecondsSince1970:))
    }

    static func insert(_ notification: LHTSchema.Notification, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO notification (notification_id, seq, user_id, activity, scheduled_for_ms, test, body) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [notification.notificationId, notification.seq, notification.userId.rawValue, notification.activity.rawValue,
                             notification.scheduledFor.millisecondsSince1970, notification.test, try wireEncoder().encode(notification)])
    }

    static func recordRateLimited(_ notificationId: String, user: UserID, activity: Activity, at: Instant, lastSent: Instant,
                                  _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO rate_limited (notification_id, user_id, activity, scheduled_for_ms, last_sent_ms) VALUES (?, ?, ?, ?, ?)
            """, arguments: [notificationId, user.rawValue, activity.rawValue, at.millisecondsSince1970, lastSent.millisecondsSince1970])
    }

    static func notification(_ notificationId: String, _ db: Database) throws -> LHTSchema.Notification? {
        try Data.fetchOne(db, sql: "SELECT body FROM notification WHERE notification_id = ?", arguments: [notificationId])
            .map { try WireJSON.decode(LHTSchema.Notification.self, from: $0) }
    }

    /// `notification.list` reply bytes: `{"notifications":[...]}` in seq order.
    static func list(_ query: NotificationListRequest, _ db: Database) throws -> Data {
        let bodies = try Data.fetchAll(db, sql: "SELECT body FROM notification WHERE user_id = ? AND seq > ? ORDER BY seq",
                                       arguments: [query.userId.rawValue, query.after])
        var payload = Data(#"{"notifications":["#.utf8)
        for (index, body) in bodies.enumerated() {
            if index > 0 { payload.append(UInt8(ascii: ",")) }
            payload.append(body)
        }
        payload.append(contentsOf: Array("]}".utf8))
        return payload
    }

    /// Counters as they stood before a restart, so `health` counts over the service's whole life.
    static func counts(_ db: Database) throws -> (notified: Int64, rateLimited: Int64) {
        (try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM notification") ?? 0,
         try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM rate_limited") ?? 0)
    }
}
