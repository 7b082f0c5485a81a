import Foundation
import GRDB
import LHTSchema
@testable import Storage
import Testing
import TestSupport

/// The log as a file of its own (`EventFile`, `EventFileStore`; README "The log as a file").
@Suite struct EventFileTests {
    let directory = temporaryDirectory("lht-event-file")
    var path: String { directory.appendingPathComponent("log.events").path }

    static func events(_ seqs: ClosedRange<Int64>, envelopeBytes: Int = 40) -> [PendingEvent] {
        seqs.map { seq in
            PendingEvent(type: "session.logged", seq: seq, topic: "session.logged.user\(seq % 3).mindfulness",
                         envelope: Data(#"{"seq":\#(seq),"pad":"\#(String(repeating: "x", count: envelopeBytes))"}"#.utf8))
        }
    }

    func records(_ file: EventFile, after seq: Int64 = 0) throws -> [PendingEvent] {
        var read: [PendingEvent] = []
        try file.forEach(after: seq, through: .max) { seq, topic, envelope in
            read.append(PendingEvent(type: "session.logged", seq: seq, topic: String(decoding: topic, as: UTF8.self), envelope: Data(envelope)))
            return true
        }
        return read
    }

    func size() throws -> Int { try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? -1 }

    @Test func theChecksumIsCRC32C() {
        // The check value every CRC-32C implementation gives for these nine bytes.
        for checksum in [CRC32C.checksum, CRC32C.tableChecksum] {
            #expect(Array("123456789".utf8).withUnsafeBytes { checksum($0) } == 0xE306_9283)
            #expect([UInt8]().withUnsafeBytes { checksum($0) } == 0)
        }
    }

    @Test(.enabled(if: CRC32C.hardware, "the processor has no crc32 instruction"))
    func theInstructionAndTheTablesAgree() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<1_100).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            // Every length across the 8-byte steps and the bytes after them, from every alignment.
            for start in 0..<8 {
                for count in 0...(all.count - start) where count < 80 || count % 97 == 0 || count == all.count - start {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + count)])
                    #expect(CRC32C.checksum(slice) == CRC32C.tableChecksum(slice), "from \(start), \(count) bytes")
                }
            }
        }
    }

    @Test func recordsReadBackInOrderWithTheirIdentityAfterAReopen() throws {
        let identity = RecordID()
        try EventFile.create(path: path, identity: identity)
        let file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...3))
        try file.append(Self.events(4...10))
        #expect(try records(file).map(\.seq) == Array(1...10))
        let reopened = try EventFile(path: path, logger: quietLogger("log"))
        #expect(reopened.identity == identity && reopened.lastSeq == 10)
        let read = try records(reopened, after: 6)
        #expect(read.map(\.seq) == [7, 8, 9, 10])
        #expect(read.map(\.topic) == Self.events(7...10).map(\.topic) && read.map(\.envelope) == Self.events(7...10).map(\.envelope))
        // `through` and stopping early.
        var seen: [Int64] = []
        try reopened.forEach(after: 2, through: 8) { seq, _, _ in
            seen.append(seq)
            return seq < 5
        }
        #expect(seen == [3, 4, 5])
    }

    /// Reads go in pieces of 64 KB and more: records that straddle one piece and the next read whole.
    @Test func recordsAcrossManyReadsReadBackInOrder() throws {
        try EventFile.create(path: path, identity: RecordID())
        let file = try EventFile(path: path, logger: quietLogger("log"))
        for first in stride(from: Int64(1), through: 5000, by: 500) { try file.append(Self.events(first...first + 499, envelopeBytes: Int(first % 97))) }
        let reopened = try EventFile(path: path, logger: quietLogger("log"))
        #expect(reopened.lastSeq == 5000 && !reopened.openedFromIndex)
        #expect(try records(reopened).map(\.seq) == Array(1...5000))
        #expect(try records(reopened, after: 4321).map(\.envelope) == Self.events(4322...4500, envelopeBytes: 4001 % 97).map(\.envelope)
                + Self.events(4501...5000, envelopeBytes: 4501 % 97).map(\.envelope))
    }

    @Test func aRecordLargerThanAReadIsReadWhole() throws {
        try EventFile.create(path: path, identity: RecordID())
        let file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...2) + Self.events(3...3, envelopeBytes: 3 << 20) + Self.events(4...5))
        let read = try records(try EventFile(path: path, logger: quietLogger("log")))
        #expect(read.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(read[2].envelope.count > 3 << 20)
    }

    /// Only every 64th record's offset is kept: a read from any seq, to any seq, and a commit cut off
    /// in the middle of a group read exactly those records, as opened from the index and from the file.
    @Test func readsFromAnySeqScanForwardFromTheNearestOffsetKept() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        var seq: Int64 = 0
        for size in [1, 63, 1, 64, 65, 7, 200] {
            try file.append(Self.events(seq + 1...seq + Int64(size), envelopeBytes: Int(seq % 300)))
            seq += Int64(size)
        }
        func expectReads(_ file: EventFile) throws {
            for from in [0, 1, 62, 63, 64, 65, 127, 128, 129, 200, 300, seq - 1, seq] as [Int64] {
                #expect(try records(file, after: from).map(\.seq) == Array(stride(from: from + 1, through: seq, by: 1)), "after \(from)")
                var through: [Int64] = []
                try file.forEach(after: from, through: from + 70) { seq, _, _ in through.append(seq); return true }
                #expect(through == Array(stride(from: from + 1, through: min(from + 70, seq), by: 1)), "after \(from) through +70")
            }
        }
        try expectReads(file)
        file.truncate(after: 130)
        seq = 130
        #expect(file.lastSeq == 130)
        try file.append(Self.events(131...140, envelopeBytes: 3))
        seq = 140
        try expectReads(file)
        try file.saveIndex()
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(file.openedFromIndex && file.lastSeq == seq)
        try expectReads(file)
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(!file.openedFromIndex && file.lastSeq == seq)
        try expectReads(file)
    }

    /// What a machine that stopped mid-write leaves: the end of the last record still the zeros
    /// written ahead of it, a file cut short inside a record (one that an older build grew record by
    /// record), or bytes that fail its check. They were never synced, so never acknowledged: cut
    /// off, and the log goes on.
    @Test func anIncompleteTailIsCutOffAndTheLogGoesOn() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...4))
        let whole = file.end
        try file.append(Self.events(5...5))
        try overwrite(at: file.end - 7, with: Data(count: 7))
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try file.lastSeq == 4 && file.end == whole && size() == whole)
        try file.append(Self.events(5...6))
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try records(file).map(\.seq) == [1, 2, 3, 4, 5, 6])

        #expect(truncate(path, off_t(file.end - 7)) == 0)
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try file.lastSeq == 5 && size() == file.end)

        // A flipped byte in the newest record's envelope fails its check.
        try overwrite(at: file.end - 3, with: Data("?".utf8))
        #expect(try EventFile(path: path, logger: quietLogger("log")).lastSeq == 4)
    }

    func overwrite(at offset: Int, with bytes: Data) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: bytes)
        try handle.close()
    }

    /// Zeros are written ahead of the records (README "A zeroed tail"), so an append lands on blocks
    /// the file has: it keeps its size until fewer than half of them are left. A start after a crash
    /// keeps them as they are, and so does one after a clean stop.
    @Test func theZerosAheadOfTheRecordsAreKeptAndNotATornTail() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...2))
        let zeroed = try size()
        #expect(zeroed == file.fileEnd && zeroed >= file.end + EventFile.zeroedAhead && zeroed % 4096 == 0)
        try file.append(Self.events(3...40))
        #expect(try size() == zeroed)
        let tail = try Data(contentsOf: URL(fileURLWithPath: path)).dropFirst(file.end)
        #expect(tail.count == zeroed - file.end && tail.allSatisfy { $0 == 0 })

        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(try !file.openedFromIndex && file.lastSeq == 40 && file.fileEnd == zeroed && size() == zeroed)
        try file.saveIndex()
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(file.openedFromIndex && file.lastSeq == 40 && file.fileEnd == zeroed)

        // A record larger than what is left writes zeros ahead of itself again.
        try file.append(Self.events(41...41, envelopeBytes: 3 << 20))
        #expect(try size() >= file.end + EventFile.zeroedAhead)
        try file.append(Self.events(42...42))
        #expect(try records(try EventFile(path: path, logger: quietLogger("log"))).map(\.seq) == Array(1...42))
    }

    @Test func aCommitThatFailedIsTakenOffTheFile() throws {
        try EventFile.create(path: path, identity: RecordID())
        let file = try EventFile(path: path, logger: quietLogger("log"))
        try file.append(Self.events(1...2))
        let before = file.end
        try file.append(Self.events(3...5))
        file.truncate(after: 2)
        #expect(try file.lastSeq == 2 && file.end == before && size() == before)
        try file.append(Self.events(3...3))
        #expect(try records(try EventFile(path: path, logger: quietLogger("log"))).map(\.seq) == [1, 2, 3])
    }

    /// A clean stop saves the offsets, and the next start takes them instead of reading the file, once:
    /// an index that no longer matches the file, or of another file, is ignored.
    @Test func aCleanStopsIndexSparesTheNextStartTheRead() throws {
        try EventFile.create(path: path, identity: RecordID())
        var file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(!file.openedFromIndex)
        try file.append(Self.events(1...6))
        try file.saveIndex()
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(file.openedFromIndex && file.lastSeq == 6)
        #expect(try records(file, after: 3).map(\.seq) == [4, 5, 6])
        #expect(!FileManager.default.fileExists(atPath: path + ".index"), "good for one start only")
        try file.append(Self.events(7...7))
        #expect(try records(try EventFile(path: path, logger: quietLogger("log"))).map(\.seq) == Array(1...7))

        // Saved, then records were appended (by a start that crashed, the index's unlink not yet on
        // disk), into the zeros ahead: the file kept its size, and the index is stale all the same.
        file = try EventFile(path: path, logger: quietLogger("log"))
        try file.saveIndex()
        let sizeSaved = try size()
        try file.append(Self.events(8...9))
        #expect(try size() == sizeSaved)
        file = try EventFile(path: path, logger: quietLogger("log"))
        #expect(!file.openedFromIndex && file.lastSeq == 9)

        // Another log's index.
        try file.saveIndex()
        let other = directory.appendingPathComponent("other.events").path
        try EventFile.create(path: other, identity: RecordID())
        try FileManager.default.moveItem(atPath: path + ".index", toPath: other + ".index")
        let opened = try EventFile(path: other, logger: quietLogger("log"))
        #expect(!opened.openedFromIndex && opened.lastSeq == 0)
    }

    @Test func anotherFileIsRefusedByName() throws {
        try Data("SQLite format 3\0 and more bytes than a header holds, so it is read whole".utf8).write(to: URL(fileURLWithPath: path))
        #expect { try EventFile(path: path, logger: quietLogger("log")) } throws: { "\($0)".contains(path) && "\($0)".contains("LHTLOG1") }
    }

    @Test func theFileIsPrivate() throws {
        try EventFile.create(path: path, identity: RecordID())
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}

/// `EventFileStore`: the log in a file, its tables a projection; what `SQLiteStore` holds, kept.
@Suite struct EventFileStoreTests {
    let directory = temporaryDirectory("lht-event-file-store")

    func open(boot: String = "boot") throws -> EventFileStore {
        try EventFileStore(directory: directory, name: "store", sqliteMigrations: { _ in }, projection: ProjectionTests.projection,
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
        let sqlite = try SQLiteStore(directory: temporaryDirectory("lht-sqlite-log"), name: "store", migrations: { _ in },
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
        let failing = Projection(migrate: ProjectionTests.projection.migrate) { seq, data, sql in
            if case .sessionLogged(let session) = data, session.source == "unwritable" { throw Unwritable() }
            try ProjectionTests.projection.replay!(seq, data, sql)
        }
        let store = try EventFileStore(directory: directory, name: "store", sqliteMigrations: { _ in }, projection: failing,
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
        let sqlite = try SQLiteStore(directory: directory, name: "store", migrations: { _ in }, projection: ProjectionTests.projection,
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

/// `SectorWriter`: new bytes written around the page cache, a sector at a time (README "A zeroed tail").
@Suite struct SectorWriterTests {
    let path = temporaryDirectory("lht-sectors").appendingPathComponent("log").path

    /// Bytes this thread has had written to storage so far (`/proc/thread-self/io`): other tests run
    /// on other threads meanwhile.
    static func bytesWrittenByThisThread() throws -> Int {
        let io = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
        return io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") }.flatMap { Int($0.split(separator: " ").last!) } ?? -1
    }

    /// Pieces of any length, one after the other, read back as written, with zeros after the last;
    /// cut short in between, the next write takes the file's own last sector.
    @Test func piecesOfAnyLengthReadBackAsWritten() throws {
        try DataDirectory.createPrivateFile(path)
        let file = open(path, O_RDWR | O_CLOEXEC)
        defer { close(file) }
        let writer = try #require(SectorWriter(path: path), "direct I/O where the tests' files are (ext4 here)")
        var generator = SystemRandomNumberGenerator()
        var expected = Data()
        for round in 0..<300 {
            if round == 150 {
                expected.removeLast(700)  // a commit that failed: `EventFile.truncate`
                #expect(ftruncate(file, off_t(expected.count)) == 0)
            }
            let piece = Data((0..<Int.random(in: 1...1500, using: &generator)).map { _ in UInt8.random(in: 1...255, using: &generator) })
            #expect(try piece.withUnsafeBytes { try writer.write($0, at: expected.count, file: file) })
            expected += piece
        }
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(written.prefix(expected.count) == expected)
        #expect(written.count - expected.count < 512 && written.dropFirst(expected.count).allSatisfy { $0 == 0 })
    }

    /// The point of it: a small record and its sync cost the sectors written, not a 4 KB page.
    @Test func aSmallWriteAndItsSyncCountTheSectorsNotThePage() throws {
        try DataDirectory.createPrivateFile(path)
        let file = open(path, O_RDWR | O_CLOEXEC)
        defer { close(file) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        #expect(pwrite(file, zeros, zeros.count, 0) == zeros.count && fsync(file) == 0)
        let writer = try #require(SectorWriter(path: path))
        let record = [UInt8](repeating: 7, count: 300)
        func bytesPerWrite(_ write: (Int) throws -> Void) throws -> Int {
            let before = try Self.bytesWrittenByThisThread()
            for n in 0..<100 {
                try write(n * record.count)
                #expect(fdatasync(file) == 0)
            }
            return (try Self.bytesWrittenByThisThread() - before) / 100
        }
        let direct = try bytesPerWrite { offset in _ = try record.withUnsafeBytes { try writer.write($0, at: offset, file: file) } }
        let paged = try bytesPerWrite { offset in #expect(pwrite(file, record, record.count, 100 * record.count + offset) == record.count) }
        #expect(direct <= 1024 && paged >= 4096, "direct \(direct) B a write, through the page cache \(paged)")
    }
}
