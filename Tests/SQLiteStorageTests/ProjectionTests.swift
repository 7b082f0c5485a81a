import Foundation
import GRDB
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// A projection (docs/storage.md): rows derived from the log, in a file that is never synced. It
/// is caught up from the log when behind, and rebuilt when it may have lost writes (open across a
/// reboot), is unreadable, or is of another log.
@Suite struct ProjectionTests {
    /// Every logged session's id and seq, as the live path and replay both write them.
    static let projection = Projection(migrations: [.sqlite("logged", "CREATE TABLE logged (seq INTEGER PRIMARY KEY, id TEXT NOT NULL)")],
                                       replay: { seq, data, sql in
        guard case .sessionLogged(let session) = data else { return }
        try insert(session, seq: seq, sql)
    })

    static func insert(_ session: StoredSession, seq: Int64, _ sql: StoreConnection) throws {
        try sql.execute("INSERT INTO logged (seq, id) VALUES (?, ?)", [.integer(seq), .text(session.id.description)])
    }

    let directory = temporaryDirectory("lht-projection")

    func open(boot: String) throws -> SQLiteStore {
        try SQLiteStore(directory: directory, name: "store", migrations: [], projection: Self.projection,
                        logger: quietLogger("store"), bootID: boot)
    }

    /// Opens the store again as a process started after a `kill -9` of this one would: the old
    /// connection gone (it holds the projection file's lock), the projection not marked clean.
    func restart(_ store: SQLiteStore, boot: String) throws -> SQLiteStore {
        try store.database.close()
        return try open(boot: boot)
    }

    /// Logs `count` sessions as a service does: the event and its projected row in one transaction.
    func log(_ count: Int, in store: SQLiteStore) throws {
        for n in 0..<count {
            let start = Instant(secondsSince1970: 1_780_000_000 + Int64(n) * 3600)
            let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: start,
                                        end: start.adding(seconds: 600), source: nil, loggedAt: start)
            try store.write(now: start, { tx in
                try Self.insert(session, seq: tx.nextSeq, tx.sql)
                try tx.append(Events.sessionLogged, userId: session.userId, activity: .mindfulness, data: session)
            }, committed: { _ in })
        }
    }

    func projected(_ store: SQLiteStore) throws -> [Int64] {
        try store.read { try Int64.fetchAll($0, sql: "SELECT seq FROM logged ORDER BY seq") }
    }

    /// What a lost write leaves: the projection without its newest row.
    func loseNewestRow(_ store: SQLiteStore) throws {
        try store.database.write { try $0.execute(sql: "DELETE FROM logged WHERE seq = (SELECT MAX(seq) FROM logged)") }
    }

    @Test func theLivePathAndTheLogAgreeAndTheLogFileHoldsNoProjectedTable() throws {
        let store = try open(boot: "a")
        try log(3, in: store)
        #expect(try projected(store) == [1, 2, 3])
        #expect(try store.read { try $0.tableExists("logged", in: "main") } == false)
        #expect(try store.read { try Int64.fetchOne($0, sql: "SELECT applied_seq FROM projection.projection_state") } == 3)
    }

    @Test func aProjectionBehindTheLogIsCaughtUpAtStart() throws {
        var store = try open(boot: "a")
        try log(4, in: store)
        // As a `kill -9` between the log's commit and the projection's leaves it: two events behind.
        try store.database.write { db in
            try db.execute(sql: "DELETE FROM logged WHERE seq > 2; UPDATE projection.projection_state SET applied_seq = 2")
        }
        store = try restart(store, boot: "a")
        #expect(try projected(store) == [1, 2, 3, 4])
    }

    @Test func aProjectionOpenWhenTheMachineStoppedIsRebuiltFromTheLog() throws {
        var store = try open(boot: "a")
        try log(3, in: store)
        try loseNewestRow(store)
        // The same boot: the kernel kept every write, so the file is trusted as it is.
        store = try restart(store, boot: "a")
        #expect(try projected(store) == [1, 2])
        // Another boot, and the file was not closed cleanly: rebuilt.
        store = try restart(store, boot: "b")
        #expect(try projected(store) == [1, 2, 3])
    }

    @Test func aProjectionClosedCleanlyIsKeptAcrossAReboot() throws {
        var store = try open(boot: "a")
        try log(3, in: store)
        try loseNewestRow(store)
        store.close()
        store = try open(boot: "b")
        #expect(try projected(store) == [1, 2], "a clean file is not rebuilt")
        // Open again (unclean from here on): the next boot rebuilds it.
        store = try restart(store, boot: "c")
        #expect(try projected(store) == [1, 2, 3])
    }

    @Test func anUnreadableProjectionFileIsRebuilt() throws {
        var store = try open(boot: "a")
        try log(3, in: store)
        store.close()
        let path = directory.appendingPathComponent("store.projection.sqlite").path
        try Data(repeating: 0xA5, count: 4096).write(to: URL(fileURLWithPath: path))
        store = try open(boot: "a")
        #expect(try projected(store) == [1, 2, 3])
    }

    @Test func aProjectionOfAnotherLogStartsOver() throws {
        var store = try open(boot: "a")
        try log(3, in: store)
        store.close()
        // A new log file (a restore, an operator's reset): its history is not the projection's.
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent("store.sqlite" + suffix))
        }
        store = try open(boot: "a")
        #expect(try projected(store) == [])
        try log(1, in: store)
        #expect(try projected(store) == [1])
    }

    /// The kernel writes back whole 4 KB pages, so a projection's pages are as large; a file made with
    /// 1 KB pages before is rewritten once at start, every row kept.
    @Test func theProjectionFileHasPagesOfTheKernelsSizeAndAnOlderFileIsRewritten() throws {
        var store = try open(boot: "a")
        #expect(try store.read { try Int.fetchOne($0, sql: "PRAGMA projection.page_size") } == 4096)
        #expect(try store.read { try Int.fetchOne($0, sql: "PRAGMA main.page_size") } == SQLiteStore.pageSize)
        try log(40, in: store)
        store.close()
        let path = directory.appendingPathComponent("store.projection.sqlite").path
        let older = try DatabaseQueue(path: path)
        try older.writeWithoutTransaction { try $0.execute(sql: "PRAGMA page_size = 1024; VACUUM") }
        #expect(try older.read { try Int.fetchOne($0, sql: "PRAGMA page_size") } == 1024)
        try older.close()
        store = try open(boot: "a")
        #expect(try store.read { try Int.fetchOne($0, sql: "PRAGMA projection.page_size") } == 4096)
        #expect(try projected(store) == Array(1...40))
        #expect(try store.read { try Int64.fetchOne($0, sql: "SELECT applied_seq FROM projection.projection_state") } == 40)
    }

    /// The service keeps the file locked while it runs: a query from outside is refused at once,
    /// where it would otherwise hold the service's next commit back until it ended.
    @Test func aReaderOutsideCannotHoldACommitBack() throws {
        let store = try open(boot: "a")
        try log(1, in: store)
        func countFromOutside() throws -> Int? {
            var configuration = Configuration()
            configuration.readonly = true
            let outside = try DatabaseQueue(path: directory.appendingPathComponent("store.projection.sqlite").path, configuration: configuration)
            return try outside.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM logged") }
        }
        #expect(throws: DatabaseError.self) { try countFromOutside() }
        try log(1, in: store)
        #expect(try projected(store) == [1, 2])
        store.close()
        #expect(try countFromOutside() == 2, "released by close")
    }

    @Test func theProjectionFileIsPrivate() throws {
        let store = try open(boot: "a")
        try log(1, in: store)
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let mode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(file).path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file)")
        }
    }
}

/// A follower's transaction that only copies an upstream's events asks for no sync of its own,
/// unless it appends events (which must be on disk before they are published); nor does one that
/// changed nothing.
@Suite struct UpstreamCopySyncTests {
    @Test func onlyATransactionThatChangedWhatMustBeDurableAsksForASync() throws {
        let store = try SQLiteStore(directory: temporaryDirectory("lht-copy-sync"), name: "store", migrations: [],
                                    logger: quietLogger("store"))
        let now = Instant(secondsSince1970: 1_780_000_000)
        let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .workout, start: now, end: now.adding(seconds: 60),
                                    source: nil, loggedAt: now)
        let before = store.commits.committed
        try store.write(now: now, copyOfUpstream: true, { tx in try tx.setCursor("session-logger", 1, logId: nil) }, committed: { _ in })
        #expect(store.commits.committed == before)
        #expect(try store.cursor("session-logger").seq == 1)
        try store.write(now: now, copyOfUpstream: true, { tx in
            try tx.setCursor("session-logger", 2, logId: nil)
            try tx.append(Events.sessionLogged, userId: session.userId, activity: .workout, data: session)
        }, committed: { _ in })
        #expect(store.commits.committed == before + 1)
        try store.write(now: now, { tx in try tx.setCursor("session-logger", 3, logId: nil) }, committed: { _ in })
        #expect(store.commits.committed == before + 2, "any other transaction that changes something is synced")
        try store.write(now: now, { tx in _ = try tx.sql.rows("SELECT seq FROM main.cursor", []) { $0.integer(0) } }, committed: { _ in })
        #expect(store.commits.committed == before + 2, "a transaction that changed nothing is not")
    }
}
