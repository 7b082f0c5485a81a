import Foundation
import GRDB
import LHTSchema
import Storage

extension EventLog {
    /// SQLite's log (`outbox`), as it is in the file; the envelopes it stores from now on compressed.
    convenience init(source: String, database: DatabaseQueue) throws {
        let (lastSeq, identity) = try database.read { db in
            (try db.fetchValue(Int64.self, "SELECT MAX(seq) FROM outbox") ?? 0,
             try db.fetchValue(String.self, "SELECT id FROM log_identity").flatMap(RecordID.init) ?? RecordID())
        }
        self.init(source: source, identity: identity, lastSeq: lastSeq, records: .table("outbox", compression: EnvelopeCompression()))
    }

    /// SQLite's history of the log's own tables, registered before a service's (`DatabaseMigrator.register`).
    public static let sqliteMigrations: [Migration] = [
        // `seq` is assigned by us, never by SQLite, so it cannot be reused after a rollback.
        .sqlite("outbox", """
            CREATE TABLE outbox (seq INTEGER PRIMARY KEY NOT NULL, topic TEXT NOT NULL, envelope BLOB NOT NULL);
            CREATE TABLE cursor (upstream TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL);
            """),
        // A database from before identities gets one now: its history is the one it has.
        Migration("log identity", [
            .only(.sqlite, "CREATE TABLE log_identity (id TEXT NOT NULL); ALTER TABLE cursor ADD COLUMN log_id TEXT;"),
            .data { sql in try sql.execute("INSERT INTO log_identity (id) VALUES (?)", [.text(RecordID().description)]) },
        ]),
        // Changes nothing: it marks a file whose envelopes may be compressed (`EnvelopeCompression`).
        // Builds from this one on refuse a file with migrations they do not know (`SQLiteStore`);
        // builds from before do not check, and would serve the frames as JSON.
        Migration("envelopes compressed", []),
        // Changes nothing either: from here on frames may name the dictionary with entropy tables
        // (`EnvelopeCompression.Dictionary`), which a build from before would take for damage.
        Migration("envelopes compressed with entropy tables", []),
    ]
}
