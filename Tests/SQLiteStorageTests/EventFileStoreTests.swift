import Foundation
import GRDB
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// `EventFileStore`: the log in a file, its tables a projection; what `SQLiteStore` holds, kept.
@Suite struct EventFileStoreTests {
    let directory = temporaryDirectory("lht-event-file-store")

    func open(boot: String = "boot") throws -> EventFileStore {
        try EventFileStore(directory: directory, name: "store", sqliteMigrations: [], projection: ProjectionTests.projection,
                           logger: quietLogger("store"), bootID: boot)
    }

    /// Sessions of two users in turn.
    static func sessions(_ count: Int) -> [StoredSession] {
        (0..<count).map { n in
            let start = Instant(secondsSince1970: 1_780_000_000 + Int64(n) * 3600)
            return StoredSession(id: RecordID(), userId: UserID(n % 2 == 0 ? "ada" : "bob")!, activity: .mindfulness, start: start,
                                 end: start.adding(seconds: 600), source: nil, loggedAt: start)
        }
    }

    static func log(_ count: Int, in store: Store) throws { try log(sessions(count), in: store) }

    /// Each session's event with its projected row, as a service logs them.
    static func log(_ sessions: [StoredSession], in store: Store) throws {
        for session in sessions {
            try store.write(now: session.loggedAt, copyOfUpstream: false, { tx in
                // Where the tables are applied behind the log, the projection writes the row from the event.
                if tx.hasTables { try ProjectionTests.insert(session, seq: tx.nextSeq, tx.sql) }
                try tx.append(Events.sessionLogged, userId: session.userId, activity: .mindfulness, data: session)
            }, committed: { _ in })
        }
    }

    static func since(_ store: Store, after: Int64 = 0, limit: Int = 1000, user: String? = nil) throws -> Data {
        try store.query { sql in
            try store.eventLog.since(EventsSinceRequest(after: after, limit: limit), for: user.flatMap(UserID.init), publisher: .sessionLogger, in: sql)
        }
    }

    static func projected(_ store: Store) throws -> [Int64] {
        try store.query { try $0.rows("SELECT seq FROM logged ORDER BY seq", []) { $0.integer(0) } }
    }

    @Test func eventsSinceAnswersAsTheSQLiteLogDoes() throws {
        let sqlite = try SQLiteStore(directory: temporaryDirectory("lht-sqlite-log"), name: "store", migrations: [],
                                     projection: ProjectionTests.projection, logger: quietLogger("store"))
        let file = try open()
        defer { sqlite.close(); file.close() }
        // The same events in both, byte for byte.
        let sessions = Self.sessions(9)
        try Self.log(sessions, in: sqlite)
        try Self.log(sessions, in: file)
        #expect(try Self.since(file).count > 9 * 100)
        // Each log has its identity, and each envelope its own event id.
        func withoutLogId(_ reply: Data) -> String {
            String(decoding: reply, as: UTF8.self).replacingOccurrences(of: #","logId":"[^"]*""#, with: "", options: .regularExpression)
                .replacingOccurrences(of: #"("seq":[0-9]+),"id":"[^"]*""#, with: "$1", options: .regularExpression)
        }
        for (after, limit, user) in [(Int64(0), 1000, String?.none), (3, 2, nil), (0, 1000, "bob"), (2, 3, "ada"), (9, 10, nil), (0, 0, nil)] {
            let fromFile = try withoutLogId(Self.since(file, after: after, limit: limit, user: user))
            let fromSQLite = try withoutLogId(Self.since(sqlite, after: after, limit: limit, user: user))
            #expect(fromFile == fromSQLite, "after \(after), limit \(limit), \(user ?? "all"): \(fromFile) against \(fromSQLite)")
        }
        #expect(try Self.projected(file) == Array(1...9))
    }

    /// A `kill -9` after the events reached the file and before the projection committed: the start
    /// catches the projection up from the file.
    @Test func aProjectionBehindTheFileIsCaughtUpAtStart() throws {
        var store = try open()
        try Self.log(3, in: store)
        #expect(try Self.projected(store) == [1, 2, 3])
        try store.database.close()  // as a kill -9 leaves it: not marked clean, the lock gone
        let file = try EventFile(path: store.path, logger: quietLogger("log"))
        try file.append(EventFileTests.events(4...5).map { event in
            let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: Instant(secondsSince1970: event.seq),
                                        end: Instant(secondsSince1970: event.seq + 60), source: nil, loggedAt: Instant(secondsSince1970: event.seq))
            let topic = Events.sessionLogged.topic(userId: session.userId, activity: .mindfulness).description
            return PendingEvent(type: "session.logged", seq: event.seq, topic: topic,
                                envelope: EventEnvelope<StoredSession>.frame(type: "session.logged", seq: event.seq, time: session.loggedAt,
                                                                             source: "store", topic: topic, data: session))
        })
        store = try open()
        defer { store.close() }
        #expect(store.eventLog.lastSeq == 5)
        #expect(try Self.projected(store) == [1, 2, 3, 4, 5])
        try Self.log(1, in: store)
        #expect(store.eventLog.lastSeq == 6)
    }

    /// Reads behind the log (`Transaction.readBehindTheLog`) run on the projection's thread and see
    /// exactly the events appended before them, also those of their own transaction. A read whose
    /// savepoint or transaction rolls back is never run.
    @Test func aReadBehindTheLogSeesExactlyTheEventsBeforeIt() throws {
        let store = try open()
        defer { store.close() }
        try Self.log(2, in: store)
        var seen: [String: [Int64]] = [:]
        func read(_ name: String, in tx: Transaction) {
            tx.readBehindTheLog({ sql in
                try JSONEncoder().encode(sql.rows("SELECT seq FROM logged ORDER BY seq", []) { $0.integer(0) })
            }, answer: { seen[name] = try? JSONDecoder().decode([Int64].self, from: $0.get()) })
        }
        func append(_ tx: Transaction) throws {
            let session = Self.sessions(1)[0]
            try tx.append(Events.sessionLogged, userId: session.userId, activity: .mindfulness, data: session)
        }
        struct Refused: Error {}
        try store.write(now: Instant(secondsSince1970: 0), copyOfUpstream: false, { tx in
            read("first", in: tx)
            try append(tx)
            read("second", in: tx)
            _ = try? tx.isolated {
                read("rolled back", in: tx)
                try append(tx)
                throw Refused()
            }
            try append(tx)
            read("last", in: tx)
        }, committed: { _ in })
        #expect(throws: Refused.self) {
            try store.write(now: Instant(secondsSince1970: 0), copyOfUpstream: false, { tx in
                try append(tx)
                read("failed", in: tx)
                throw Refused()
            }, committed: { _ in })
        }
        try store.write(now: Instant(secondsSince1970: 0), copyOfUpstream: false, { tx in read("alone", in: tx) }, committed: { _ in })
        store.readsBehindTheLog!.waitForAnswers()
        #expect(seen == ["first": [1, 2], "second": [1, 2, 3], "last": [1, 2, 3, 4], "alone": [1, 2, 3, 4]])
    }

    /// A projection that cannot apply an event (a full disk): the read before it is answered, and the
    /// read after it fails as unavailable once it waited `longestWait`, rather than wait forever.
    @Test func aReadTheProjectionCannotReachFailsAsUnavailable() throws {
        struct Unwritable: Error {}
        let failing = Projection(migrations: ProjectionTests.projection.migrations) { seq, data, sql in
            if case .sessionLogged(let session) = data, session.source == "unwritable" { throw Unwritable() }
            try ProjectionTests.projection.replay!(seq, data, sql)
        }
        let store = try EventFileStore(directory: directory, name: "store", sqliteMigrations: [], projection: failing,
                                       logger: quietLogger("store"))
        defer { store.close() }
        var answers: [String: Result<Data, Error>] = [:]
        let started = Date()
        try store.write(now: Instant(secondsSince1970: 0), copyOfUpstream: false, { tx in
            let ok = Self.sessions(1)[0], bad = StoredSession(id: RecordID(), userId: ok.userId, activity: .mindfulness, start: ok.start,
                                                               end: ok.end, source: "unwritable", loggedAt: ok.loggedAt)
            try tx.append(Events.sessionLogged, userId: ok.userId, activity: .mindfulness, data: ok)
            tx.readBehindTheLog({ _ in Data("before".utf8) }, answer: { answers["before"] = $0 })
            try tx.append(Events.sessionLogged, userId: bad.userId, activity: .mindfulness, data: bad)
            tx.readBehindTheLog({ _ in Data("after".utf8) }, answer: { answers["after"] = $0 })
        }, committed: { _ in })
        store.readsBehindTheLog!.waitForAnswers()
        #expect(try answers["before"]?.get() == Data("before".utf8))
        #expect(throws: StoreUnavailable.self) { try answers["after"]?.get() }
        #expect(Date().timeIntervalSince(started) >= ProjectionApplier.longestWait)
    }

    @Test func aRequestThatFailsLeavesNoRecord() throws {
        let store = try open()
        defer { store.close() }
        try Self.log(2, in: store)
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try store.write(now: Instant(secondsSince1970: 0), copyOfUpstream: false, { tx in
                try tx.append(Events.sessionLogged, userId: UserID("ada")!, activity: .mindfulness,
                              data: StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: Instant(secondsSince1970: 0),
                                                  end: Instant(secondsSince1970: 60), source: nil, loggedAt: Instant(secondsSince1970: 0)))
                throw Refused()
            }, committed: { _ in })
        }
        #expect(store.eventLog.lastSeq == 2)
        try Self.log(1, in: store)
        #expect(try Self.projected(store) == [1, 2, 3])
    }

    /// A log that `SQLiteStore` kept moves into the file whole: identity, seqs and envelopes; the
    /// projection, of the same log, is kept; the SQLite file is gone.
    @Test func theSQLiteLogIsCopiedIntoTheFileOnce() throws {
        let sqlite = try SQLiteStore(directory: directory, name: "store", migrations: [], projection: ProjectionTests.projection,
                                     logger: quietLogger("store"))
        try Self.log(25, in: sqlite)
        let identity = sqlite.eventLog.identity, everything = try Self.since(sqlite)
        sqlite.close()
        let store = try open()
        defer { store.close() }
        #expect(store.eventLog.identity == identity && store.eventLog.lastSeq == 25)
        #expect(try Self.since(store) == everything)
        #expect(try Self.projected(store) == Array(1...25))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(files == ["store.events", "store.projection.sqlite", "store.projection.sqlite-journal"], "\(files)")
        try Self.log(1, in: store)
        #expect(store.eventLog.lastSeq == 26)
    }
}
