import Foundation
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// SQLite's tables behind the log (`TablesBehindTheLog`, the planner's decisions): a thread
/// applies them from each commit's events, so a write transaction does not write them, and reads
/// them (`readTables`) as every commit before it left them. Lost, they come back from the log.
@Suite struct SQLiteProjectionBehindTheLogTests {
    /// A row per logged session; other events make none and are not decoded.
    static let projection = Projection(migrations: ProjectionTests.projection.migrations, eventTypes: [Events.sessionLogged.name],
                                       replay: ProjectionTests.projection.replay)
    let directory = temporaryDirectory("lht-behind-the-log")

    func open() throws -> SQLiteStore {
        try SQLiteStore(directory: directory, name: "store", migrations: [], behindTheLog: TablesBehindTheLog(file: "logged", projection: Self.projection),
                        logger: quietLogger("store"))
    }

    func logSession(_ tx: Transaction) throws {
        let start = Instant(secondsSince1970: 1_780_000_000 + tx.nextSeq * 3600)
        try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .mindfulness,
                      data: StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: start,
                                          end: start.adding(seconds: 600), source: nil, loggedAt: start))
    }

    func write<T>(_ store: SQLiteStore, _ body: (Transaction) throws -> T) throws -> T {
        try store.write(now: Instant(secondsSince1970: 1_780_000_000), body, committed: { _ in })
    }

    func logged(_ tx: Transaction) throws -> [Int64] {
        try tx.readTables { try $0.rows("SELECT seq FROM logged ORDER BY seq", []) { $0.integer(0) } }
    }

    @Test func rowsFollowEachCommitAndComeBackFromTheLog() throws {
        var store = try open()
        for _ in 0..<3 { try write(store) { try logSession($0) } }
        // Another type: no row, and no wait for one.
        try write(store) { try $0.append(Events.reminderChanged, userId: UserID("ada")!, activity: .mindfulness,
                                                   data: ReminderChange.deleted(ReminderDeleted(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness))) }
        try write(store) { tx in
            #expect(tx.hasTables && tx.projectionLags)
            #expect(try logged(tx) == [1, 2, 3], "every commit before this transaction")
            try logSession(tx)
            #expect(try logged(tx) == [1, 2, 3], "not this transaction's own events")
        }
        #expect(try write(store) { try logged($0) } == [1, 2, 3, 5])
        store.close()

        store = try open()
        #expect(try write(store) { try logged($0) } == [1, 2, 3, 5], "kept")
        store.close()
        for suffix in ["", "-journal"] { try? FileManager.default.removeItem(at: directory.appendingPathComponent("store.logged.sqlite" + suffix)) }
        store = try open()
        #expect(try write(store) { try logged($0) } == [1, 2, 3, 5], "rebuilt from the log")
        store.close()
    }

    /// A transaction of more events than a chunk has them compressed ahead, while it still appends
    /// (`EnvelopeCompression.Ahead`). Its rows are applied without a read asking for them, and,
    /// rebuilt from the log, every row comes back.
    @Test func aLargeTransactionsRowsAreAppliedUnaskedAndComeBackFromTheLog() throws {
        var store = try open()
        let count = 3 * EnvelopeCompression.Ahead.chunk + 5
        try write(store) { tx in for _ in 0..<count { try logSession(tx) } }
        // At the deadline the expectation below says how far it got.
        try? waitUntil(timeout: 10, interval: 0.005, "every row applied behind the log") { store.appliedBehindTheLog ?? 0 >= Int64(count) }
        #expect(store.appliedBehindTheLog == Int64(count))
        store.close()
        for suffix in ["", "-journal"] { try? FileManager.default.removeItem(at: directory.appendingPathComponent("store.logged.sqlite" + suffix)) }
        store = try open()
        #expect(try write(store) { try logged($0) } == Array(1...Int64(count)), "rebuilt from the log")
        store.close()
    }
}
