import Foundation
import LHTSchema
import ServiceHost
import Storage

/// The notifier's tables. A notification is stored as the JSON it was published with, so
/// `notification.list` returns those bytes without decoding them.
enum NotifierStore {
    static let sqliteMigrations: [Migration] = [
        .sqlite("notifications", tables(.sqlite)),
        // The cursor lives in the projection file now (`Projection.cursorsOnly`): read again once, changing nothing.
        .sqlite("cursor in the projection file", "DELETE FROM main.cursor"),
    ]

    static let layout = StoreLayout(sqlite: .tables(sqliteMigrations, projection: .cursorsOnly),
                                    postgresMigrations: [.postgres("notifications", tables(.postgres))], partitioned: true)

    /// notification_id is the unique key that makes an occurrence notified at most once. Ids are
    /// compared case-insensitively (PROTOCOL "Value formats"): SQLite's column says so (NOCASE), and
    /// every id is lowercased before it is stored or looked up (`key`), which serves both backends.
    private static func tables(_ dialect: SQLDialect) -> [String] {
        let nocase = dialect == .sqlite ? " COLLATE NOCASE" : ""
        return [
            """
            CREATE TABLE notification (
                notification_id TEXT NOT NULL\(nocase) PRIMARY KEY, seq BIGINT NOT NULL UNIQUE,
                user_id TEXT NOT NULL, activity TEXT NOT NULL, scheduled_for_ms BIGINT NOT NULL,
                test INTEGER NOT NULL, body \(dialect.bytesType) NOT NULL)
            """,
            "CREATE INDEX notification_by_user ON notification (user_id, seq)",
            "CREATE INDEX notification_last_sent ON notification (user_id, activity, test, seq)",
            """
            CREATE TABLE rate_limited (
                notification_id TEXT NOT NULL\(nocase) PRIMARY KEY, user_id TEXT NOT NULL, activity TEXT NOT NULL,
                scheduled_for_ms BIGINT NOT NULL, last_sent_ms BIGINT NOT NULL)
            """,
        ]
    }

    /// A notification id as stored: lowercased (the ids are ASCII).
    private static func key(_ notificationId: String) -> SQLValue { .text(notificationId.lowercased()) }

    /// Whether this occurrence was notified or dropped before: either way it is never notified again.
    static func isDecided(_ notificationId: String, _ sql: StoreConnection) throws -> Bool {
        try sql.first("""
            SELECT 1 FROM notification WHERE notification_id = ? UNION ALL SELECT 1 FROM rate_limited WHERE notification_id = ?
            """, [key(notificationId), key(notificationId)]) { _ in true } ?? false
    }

    /// The occurrence instant of the user's last notification sent for `activity`, tests aside.
    static func lastSent(user: UserID, activity: Activity, _ sql: StoreConnection) throws -> Instant? {
        try sql.first("""
            SELECT scheduled_for_ms FROM notification WHERE user_id = ? AND activity = ? AND test = 0 ORDER BY seq DESC LIMIT 1
            """, [.text(user.rawValue), .text(activity.rawValue)]) { $0.integer(0).map(Instant.init(millisecondsSince1970:)) }
    }

    static func insert(_ notification: LHTSchema.Notification, _ sql: StoreConnection) throws {
        try sql.execute("""
            INSERT INTO notification (notification_id, seq, user_id, activity, scheduled_for_ms, test, body) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [key(notification.notificationId), .integer(notification.seq), .text(notification.userId.rawValue),
                  .text(notification.activity.rawValue), .integer(notification.scheduledFor.millisecondsSince1970),
                  .integer(notification.test ? 1 : 0), .blob(try WireJSON.encode(notification))])
    }

    static func recordRateLimited(_ notificationId: String, user: UserID, activity: Activity, at: Instant, lastSent: Instant,
                                  _ sql: StoreConnection) throws {
        try sql.execute("""
            INSERT INTO rate_limited (notification_id, user_id, activity, scheduled_for_ms, last_sent_ms) VALUES (?, ?, ?, ?, ?)
            """, [key(notificationId), .text(user.rawValue), .text(activity.rawValue), .integer(at.millisecondsSince1970),
                  .integer(lastSent.millisecondsSince1970)])
    }

    static func notification(_ notificationId: String, _ sql: StoreConnection) throws -> LHTSchema.Notification? {
        try sql.first("SELECT body FROM notification WHERE notification_id = ?", [key(notificationId)]) { row in
            try row.withBytes(0) { try WireJSON.decode(LHTSchema.Notification.self, fromBytes: $0) }
        }
    }

    /// `notification.list` reply bytes: `{"notifications":[...]}` in seq order, each body as stored.
    static func list(_ query: NotificationListRequest, _ sql: StoreConnection) throws -> Data {
        var payload = Data(#"{"notifications":["#.utf8)
        try sql.appendJSONArrayElements("SELECT body FROM notification WHERE user_id = ? AND seq > ? ORDER BY seq",
                                        [.text(query.userId.rawValue), .integer(query.after)], to: &payload)
        payload.append(contentsOf: Array("]}".utf8))
        return payload
    }

    /// Counters as they stood before a restart, so `health` counts over the service's whole life.
    static func counts(_ sql: StoreConnection) throws -> (notified: Int64, rateLimited: Int64) {
        func count(_ table: String) throws -> Int64 { try sql.first("SELECT COUNT(*) FROM \(table)", []) { $0.integer(0) } ?? 0 }
        return (try count("notification"), try count("rate_limited"))
    }
}
