import Foundation
import GRDB
import LHTSchema
import Logging
import Storage

/// A projection's file: attached to the log's connection as `projection`, with its place in the
/// log (`applied_seq`, with the log's identity) updated in every transaction that appends, and the
/// service's upstream cursors: a rebuilt file starts each upstream over from its first event, so
/// copies of upstream events may live here too (applying one again must change nothing).
///
/// Unsynced writes survive a crash of the process (the kernel holds them) but not of the machine.
/// So the file records the boot it was opened in and whether it was closed cleanly (synced): a
/// file that was open when the machine went down is rebuilt from the log.
final class ProjectionFile: Sendable {
    static let schema = "projection"
    /// The kernel writes back whole memory pages. The log's small pages keep its WAL frames small;
    /// here a small page changed in a b-tree leaf cost the memory page it lies in, so pages match the
    /// kernel's (docs/decisions/0012-unsynced-projection-files.md).
    static let pageSize = 4096
    let path: String
    private let projection: Projection
    private let logger: Logger

    init(path: String, projection: Projection, bootID: String, logger: Logger) throws {
        self.path = path
        self.projection = projection
        self.logger = logger
        if FileManager.default.fileExists(atPath: path) {
            switch try? Self.state(at: path) {
            case nil:
                logger.warning("the projection file is unreadable: rebuilding it from the log", metadata: ["file": "\(path)"])
                try Self.remove(path)
            case let state? where !state.clean && (state.bootID != bootID || bootID.isEmpty):
                logger.notice("the projection file was open when the machine stopped: rebuilding it from the log", metadata: ["file": "\(path)"])
                try Self.remove(path)
            default:
                break
            }
        }
        try DataDirectory.createPrivateFile(path)
        let queue = try DatabaseQueue(path: path, configuration: Self.configuration())
        var migrator = DatabaseMigrator()
        migrator.registerMigration("projection state") { db in
            try db.execute(sql: """
                CREATE TABLE projection_state (applied_seq INTEGER NOT NULL, log_id TEXT, boot_id TEXT NOT NULL, clean INTEGER NOT NULL);
                INSERT INTO projection_state (applied_seq, boot_id, clean) VALUES (0, '', 0);
                CREATE TABLE cursor (upstream TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, log_id TEXT);
                """)
        }
        migrator.register(projection.migrations)
        try migrator.migrate(queue)
        // Open from now on: unclean until `close` syncs it. Synced, so no unsynced write after it can reach the
        // disk before it does: a file marked clean by its last stop and then written must not survive a crash as clean.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "UPDATE projection_state SET boot_id = ?, clean = 0", arguments: [bootID])
            try Self.matchPageSize(db, path: path, logger: logger)
        }
        try queue.close()
    }

    /// A file made with other pages (before they matched the kernel's) is rewritten once, every row kept.
    /// After the file is marked unclean: a machine that stops mid-rewrite leaves a file that is rebuilt.
    private static func matchPageSize(_ db: Database, path: String, logger: Logger) throws {
        let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size")
        guard pageSize != Self.pageSize else { return }
        let started = Date()
        try db.execute(sql: "PRAGMA page_size = \(Self.pageSize); VACUUM")
        logger.notice("rewrote the projection file with pages of the kernel's size", metadata: [
            "file": "\(path)", "pageSizeBefore": "\(pageSize ?? 0)", "seconds": "\(String(format: "%.2f", Date().timeIntervalSince(started)))"])
    }

    private static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA page_size = \(pageSize); PRAGMA journal_mode = PERSIST; PRAGMA synchronous = OFF")
        }
        return configuration
    }

    private static func state(at path: String) throws -> (bootID: String, clean: Bool) {
        var configuration = configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            guard try db.tableExists("projection_state") else { return ("", true) }
            let row = try Row.fetchOne(db, sql: "SELECT boot_id, clean FROM projection_state")
            return (row?["boot_id"] ?? "", (row?["clean"] as Int64? ?? 0) != 0)
        }
    }

    private static func remove(_ path: String) throws {
        for file in [path, path + "-journal"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.removeItem(atPath: file)
        }
    }

    /// Attaches the file to the log's connection. Synchronous OFF: nothing here waits for the disk.
    /// A rollback journal (PERSIST: reused, never deleted), not a WAL: no checkpoints to run, and a
    /// `kill -9` mid-commit still rolls back. Locked for the connection's life (EXCLUSIVE): a reader
    /// outside would hold a commit back until it finished, and taking and dropping the lock, with the
    /// check for a hot journal, cost system calls every transaction (decision 0012). `close` releases it.
    static func attach(_ path: String, to db: Database) throws {
        try db.execute(sql: "ATTACH DATABASE ? AS \(schema)", arguments: [path])
        try db.execute(sql: """
            PRAGMA \(schema).journal_mode = PERSIST; PRAGMA \(schema).synchronous = OFF; PRAGMA \(schema).cache_size = -\(SQLiteStore.cacheKilobytes);
            PRAGMA \(schema).locking_mode = EXCLUSIVE
            """)
    }

    /// Whether rows of the service's own log are here (`Projection.replay`), so its place in the log matters.
    var followsLog: Bool { projection.replay != nil }

    /// Records that the projection holds every event through `seq`; in the appending transaction.
    func applied(through seq: Int64, in db: Database) throws {
        try RawStatement.execute("UPDATE \(Self.schema).projection_state SET applied_seq = ?", db, [.integer(seq)])
    }

    /// Writes the rows of one logged event, given as its envelope was published.
    func apply(_ envelope: Data, in sql: StoreConnection) throws {
        guard followsLog else { return }
        let event = try WireJSON.decode(ReceivedEvent.self, from: envelope)
        if let data = event.data { try projection.replay?(event.seq, data, sql) }
    }

    /// Whether `event` may write rows here (`Projection.eventTypes`): one that makes none is not decoded.
    func makesRows(_ event: PendingEvent) -> Bool {
        followsLog && projection.eventTypes.map { $0.contains(event.type) } ?? true
    }

    /// The same for a logged event, by its topic, which starts with its type.
    private func makesRows(topic: String) -> Bool {
        followsLog && projection.eventTypes.map { $0.contains { topic.hasPrefix($0 + ".") } } ?? true
    }

    /// Writes the rows of an event just committed: from its data where the transaction kept it
    /// (`PendingEvent.data`), else from its envelope.
    func apply(_ event: PendingEvent, in sql: StoreConnection) throws {
        guard makesRows(event) else { return }
        if let data = event.data { try projection.replay?(event.seq, data, sql) } else { try apply(event.envelope, in: sql) }
    }

    /// Replays the events the file is behind the log by; starts over when it is of another log
    /// (a log file replaced) or ahead of it. `logDatabase`: where the log's table is, if not on
    /// `database` (a projection of SQLite's log with a connection of its own).
    func catchUp(_ database: DatabaseQueue, log: EventLog, logDatabase: DatabaseQueue? = nil) throws {
        let (appliedSeq, logID) = try database.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT applied_seq, log_id FROM \(Self.schema).projection_state")
            return (row?["applied_seq"] as Int64? ?? 0, row?["log_id"] as String?)
        }
        var from = appliedSeq
        if appliedSeq > 0 && (logID != log.identity.description || appliedSeq > log.lastSeq) {
            logger.notice("the projection is of another log: rebuilding it", metadata: ["appliedSeq": "\(appliedSeq)", "lastSeq": "\(log.lastSeq)"])
            try database.write { db in
                let tables = try String.fetchAll(db, sql: """
                    SELECT name FROM \(Self.schema).sqlite_master
                    WHERE type = 'table' AND name NOT IN ('projection_state', 'grdb_migrations') AND name NOT LIKE 'sqlite_%'
                    """)
                for table in tables { try db.execute(sql: "DELETE FROM \(Self.schema).\(table)") }
            }
            from = 0
        }
        try database.write { db in
            try db.execute(sql: "UPDATE \(Self.schema).projection_state SET log_id = ?", arguments: [log.identity.description])
            // No rows of the service's own log (cursors only): current at once, nothing to read back.
            if !followsLog { try applied(through: log.lastSeq, in: db) }
        }
        guard followsLog, from < log.lastSeq else { return }
        let started = Date()
        var replayed = 0
        var pageRead = true
        while from < log.lastSeq, pageRead {
            try database.write { db in
                pageRead = false
                let sql = SQLiteStoreConnection(db)
                func readPage(_ logSQL: StoreConnection) throws {
                    try log.forEach(after: from, limit: 10_000, in: logSQL) { seq, topic, envelope in
                        if makesRows(topic: topic) { try apply(envelope, in: sql) }
                        from = seq
                        replayed += 1
                        pageRead = true
                    }
                }
                if let logDatabase { try logDatabase.read { try readPage(SQLiteStoreConnection($0)) } } else { try readPage(sql) }
                try applied(through: from, in: db)
            }
        }
        logger.info("projection caught up from the log", metadata: [
            "events": "\(replayed)", "fromSeq": "\(appliedSeq)", "seconds": "\(String(format: "%.2f", Date().timeIntervalSince(started)))"])
    }

    /// Syncs the file and marks it clean: a reboot from here on need not rebuild it.
    func close(_ database: DatabaseQueue) throws {
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA \(Self.schema).synchronous = FULL")
            try db.inTransaction {
                try db.execute(sql: "UPDATE \(Self.schema).projection_state SET clean = 1")
                return .commit
            }
            try db.execute(sql: "PRAGMA \(Self.schema).synchronous = OFF")
        }
    }
}

/// This boot of the machine (Linux's `boot_id`); empty where there is none.
public enum BootID {
    public static let current: String =
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
}
