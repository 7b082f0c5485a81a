import Foundation
import GRDB
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// `SQLiteStore.write` begins and commits with cached statements (docs/storage.md), so the
/// checks GRDB's own transactions made are the store's.
@Suite struct SQLiteStoreTransactionTests {
    static func store() throws -> SQLiteStore {
        try SQLiteStore(directory: temporaryDirectory("lht-transactions"), name: "store", migrations: [
            .sqlite("note", "CREATE TABLE note (text TEXT NOT NULL)"),
        ], logger: quietLogger("store"))
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

    /// An expectation (`StoreConnection.expectLater`) is checked at once where each statement runs
    /// at once: one that does not hold throws, naming it; SQLite never sends a write whole.
    @Test func anExpectationIsCheckedAtOnce() throws {
        let store = try Self.store()
        defer { store.close() }
        #expect(!store.expectInUpstreamWrites())
        try store.write(now: Self.now, { tx in
            try tx.sql.execute("INSERT INTO note (text) VALUES ('a')", [])
            try tx.sql.expectLater("EXISTS (SELECT 1 FROM note WHERE text = ?)", [.text("a")], "note a")
            #expect(throws: StorageError.self) { try tx.sql.expectLater("NOT EXISTS (SELECT 1 FROM note)", [], "no note") }
        }, committed: { _ in })
        #expect(try Self.notes(store) == ["a"])
    }

    /// `eachIsolated` runs `betweenItems` (the host's health check) before every run of an item,
    /// a run again after a failure included, and keeps only the failing item's rows out.
    @Test func eachIsolatedRunsBetweenItemsBeforeEveryRunOfAnItem() throws {
        let store = try Self.store()
        defer { store.close() }
        struct Refused: Error {}
        var trace = ""
        let results = try store.write(now: Self.now, { tx in
            tx.betweenItems = { trace += "h" }
            return try tx.eachIsolated(["a", "b", "c"], isFatal: { _ in false }) { item in
                trace += item
                try tx.sql.execute("INSERT INTO note (text) VALUES (?)", [.text(item)])
                if item == "b" { throw Refused() }
            }
        }, committed: { _ in })
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(trace == "hahbhahbhc", "a and b together, a again alone, b alone, then c")
        #expect(try Self.notes(store) == ["a", "c"])
    }

    /// A transaction's records are stored many rows a statement: a few in one statement, more by
    /// powers of two up to `Transaction.recordsPerInsert`. Every one lands, in order, with its topic
    /// and envelope.
    @Test func aTransactionsRecordsAreStoredManyAStatementEachAsAppended() throws {
        #expect((1...16).map(Transaction.rowsPerStatement) == Array(1...16))
        #expect([17, 31, 32, 63, 64, 130].map(Transaction.rowsPerStatement) == [16, 16, 32, 32, 64, 64])
        let store = try Self.store()
        defer { store.close() }
        let count = 64 + 32 + 5
        let appended = try store.write(now: Self.now, { tx in
            try (0..<count).map { n -> PendingEvent in
                let session = StoredSession(id: RecordID(), userId: UserID("u\(n)")!, activity: .mindfulness, start: Self.now,
                                            end: Self.now.adding(seconds: 600), source: nil, loggedAt: Self.now)
                try tx.append(Events.sessionLogged, userId: session.userId, activity: .mindfulness, data: session)
                return tx.events.last!
            }
        }, committed: { _ in })
        var stored: [(seq: Int64, topic: String, envelope: Data)] = []
        try store.read { db in
            try store.eventLog.forEach(after: 0, limit: 1000, in: SQLiteStoreConnection(db)) { stored.append(($0, $1, $2)) }
        }
        #expect(stored.map(\.seq) == Array(1...Int64(count)))
        #expect(stored.map(\.topic) == appended.map(\.topic) && stored.map(\.envelope).elementsEqual(appended.map(\.envelope)))
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
