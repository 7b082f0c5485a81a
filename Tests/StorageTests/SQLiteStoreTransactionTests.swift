import Foundation
import GRDB
import LHTSchema
@testable import Storage
import Testing
import TestSupport

/// `SQLiteStore.write` begins and commits with cached statements (README "Transactions"), so the
/// checks GRDB's own transactions made are the store's.
@Suite struct SQLiteStoreTransactionTests {
    static func store() throws -> SQLiteStore {
        try SQLiteStore(directory: temporaryDirectory("lht-transactions"), name: "store", migrations: { migrator in
            migrator.registerMigration("note") { db in try db.execute(sql: "CREATE TABLE note (text TEXT NOT NULL)") }
        }, logger: quietLogger("store"))
    }

    static func notes(_ store: SQLiteStore) throws -> [String] {
        try store.read { try String.fetchAll($0, sql: "SELECT text FROM note ORDER BY rowid") }
    }

    static let now = Instant(secondsSince1970: 1_780_000_000)

    /// A body that throws leaves nothing: not its rows, not its events.
    @Test func aBodyThatThrowsLeavesNothing() throws {
        let store = try Self.store()
        defer { store.close() }
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try store.write(now: Self.now, { tx in
                try tx.sql.execute("INSERT INTO note (text) VALUES ('kept?')", [])
                let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: Self.now,
                                            end: Self.now.adding(seconds: 600), source: nil, loggedAt: Self.now)
                try tx.append(Events.sessionLogged, userId: session.userId, activity: .mindfulness, data: session)
                throw Refused()
            }, committed: { _ in })
        }
        #expect(try Self.notes(store).isEmpty)
        #expect(store.eventLog.lastSeq == 0)
        try store.write(now: Self.now, { tx in try tx.sql.execute("INSERT INTO note (text) VALUES ('next')", []) }, committed: { _ in })
        #expect(try Self.notes(store) == ["next"])
    }

    /// SQLite rolls a transaction back by itself on some errors (an I/O error, memory). A statement
    /// after that would run, and commit, on its own: it fails instead, and so does the write.
    @Test func aTransactionSQLiteRolledBackRunsNoFurtherStatement() throws {
        let store = try Self.store()
        defer { store.close() }
        #expect(throws: DatabaseError.self) {
            try store.write(now: Self.now, { tx in
                try tx.sql.execute("INSERT INTO note (text) VALUES ('before')", [])
                let db = try #require(tx.sql as? SQLiteStoreConnection).db
                try db.execute(sql: "ROLLBACK")  // as SQLite does after SQLITE_IOERR
                do {
                    try tx.sql.execute("INSERT INTO note (text) VALUES ('after')", [])
                    Issue.record("a statement ran after the rollback")
                } catch let error as DatabaseError {
                    #expect(error.resultCode == .SQLITE_ABORT)
                    throw error
                }
            }, committed: { _ in })
        }
        #expect(try Self.notes(store).isEmpty)
        try store.write(now: Self.now, { tx in try tx.sql.execute("INSERT INTO note (text) VALUES ('next')", []) }, committed: { _ in })
        #expect(try Self.notes(store) == ["next"])
    }
}
