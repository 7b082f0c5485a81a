import CZstd
import Foundation
import GRDB
import LHTSchema
@testable import SQLiteStorage
@testable import Storage
import Testing
import TestSupport

/// SQLite's log stores envelopes as zstd frames against a fixed dictionary
/// (docs/decisions/0006-zstd-envelope-dictionary.md), and gives back exactly the envelopes that were published.
@Suite struct EnvelopeCompressionTests {
    /// One envelope of each type the services store, as they wrote them (taken from their logs),
    /// German and emoji included.
    static let envelopes = [
        #"{"v":1,"type":"session.logged","seq":165000,"id":"0cc16e24-6325-46bc-bd42-12aac9d573de","time":"2026-11-27T19:43:42.345Z","source":"session-logger","topic":"session.logged.bench2.mindfulness","data":{"id":"000055f2-0000-4000-8000-000000004999","userId":"bench2","activity":"mindfulness","start":"2026-11-27T15:09:41.043Z","end":"2026-11-27T15:24:41.043Z","source":null,"loggedAt":"2026-11-27T19:43:42.345Z"}}"#,
        #"{"v":1,"type":"noalc.logged","seq":7,"id":"019ac4d2-5b1e-7c3a-9f2e-6d1b0a4c8e21","time":"2026-11-28T06:12:09.518Z","source":"session-logger","topic":"noalc.logged.henning.noalc","data":{"id":"019ac4d2-5a0f-7e11-8b3c-2f4d6a8c0e13","userId":"henning","day":"2026-11-27","level":"easy","source":"notification","loggedAt":"2026-11-28T06:12:09.518Z"}}"#,
        #"{"v":1,"type":"reminder.suppressed","seq":7,"id":"7ac48a2b-81cb-4fbb-a661-3bc9120a2c19","time":"2026-11-16T17:30:00Z","source":"reminder-planner","topic":"reminder.suppressed.henning.mindfulness","data":{"reminderId":"ae0176b4-a9ee-4fc0-92e1-4bca0a239a94","userId":"henning","activity":"mindfulness","at":"2026-11-16T17:00:00Z","localTime":"18:00","day":"2026-11-16","weekday":"mon","windowStart":"2026-11-16T05:00:00Z","status":"suppressed","cause":"4c2d7f42-ca6c-4a20-968f-b4aa0ebcf4fc"}}"#,
        #"{"v":1,"type":"reminder.due","seq":6,"id":"ae6202ae-df69-4e47-9aa5-4185e3934ecc","time":"2026-11-16T11:30:00Z","source":"reminder-planner","topic":"reminder.due.henning.workout","data":{"reminderId":"5d05a47d-bf0c-42cc-a85d-ca26b44798a5","userId":"henning","activity":"workout","at":"2026-11-16T11:00:00Z","localTime":"12:00","day":"2026-11-16","weekday":"mon","windowStart":"2026-11-16T10:00:00Z","status":"fired","timeZone":"Europe/Berlin","locale":"en","title":null,"body":null,"late":false,"test":false}}"#,
        #"{"v":1,"type":"reminder.changed","seq":3,"id":"66357309-10f0-4263-9f52-af0eeb79f416","time":"2026-11-16T07:00:00Z","source":"reminder-planner","topic":"reminder.changed.henning.workout","data":{"id":"5d05a47d-bf0c-42cc-a85d-ca26b44798a5","userId":"henning","activity":"workout","time":"12:00","weekdays":["mon","tue","wed","thu","fri","sat","sun"],"lookbackHours":1,"enabled":true,"title":null,"body":null,"createdAt":"2026-11-16T07:00:00Z"}}"#,
        #"{"v":1,"type":"streak.updated","seq":8,"id":"384ab14e-a5c9-4728-b58b-43beaba41539","time":"2026-11-27T12:46:20.347Z","source":"noalc-streak","topic":"streak.updated.dora.noalc","data":{"userId":"dora","asOf":"2026-04-08","policy":"seed","streakDays":0,"rewardsEarned":1,"rewardsUsed":0,"rewardsLost":1,"rewardsAvailable":0,"lastLoggedDay":"2026-04-08","todayLogged":true}}"#,
        #"{"v":1,"type":"notify","seq":5,"id":"e3922853-f1b0-4bad-affa-1e6d627df54b","time":"2026-11-27T12:46:23.442Z","source":"notifier","topic":"notify.sam.workout","data":{"notificationId":"f5675cdd-af5e-4422-b1f2-a39c9f5d26e1@2026-11-16T18:00:00Z","seq":5,"userId":"sam","activity":"workout","title":"Zeit für dein Workout","body":"Zeit für dein tägliches Workout! 💪","category":"workout","actions":[{"id":"open.workout","title":"Workout starten","opensApp":true}],"deepLink":"lht://open/workout","reminderId":"f5675cdd-af5e-4422-b1f2-a39c9f5d26e1","scheduledFor":"2026-11-16T18:00:00Z","sentAt":"2026-11-27T12:46:23.442Z","locale":"de","test":false}}"#,
    ].map { Data($0.utf8) }

    static let zstdMagic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    @Test func everyTypeReadsBackByteForByteFromAboutHalfItsSizeOrLess() throws {
        let compression = EnvelopeCompression()
        for envelope in Self.envelopes {
            let stored = compression.compact(envelope)
            #expect(Array(stored.prefix(4)) == Self.zstdMagic)
            #expect(try compression.expand(stored) == envelope)
            // 35–50 % here (zstd 1.5.4); another zstd may choose its matches a little differently.
            #expect(stored.count * 100 <= envelope.count * 55, "\(stored.count) of \(envelope.count) bytes: \(String(decoding: envelope.prefix(40), as: UTF8.self))")
        }
    }

    /// A batch large enough to be shared between two threads gives each envelope's own frame, in order.
    @Test func aBatchCompressedOnTwoThreadsIsEachEnvelopeInOrder() throws {
        let compression = EnvelopeCompression()
        for count in [3, EnvelopeCompression.sharedFrom, 1001] {
            let batch = (0..<count).map { Self.envelopes[$0 % Self.envelopes.count] + Data(" \($0)".utf8) }
            let stored = compression.compact(batch)
            #expect(stored == batch.map(compression.compact))
            #expect(try stored.map(compression.expand) == batch)
        }
    }

    /// A transaction's envelopes compressed ahead, a chunk at a time on the other thread, give each
    /// envelope's own frame in order, also after a savepoint took some back: from those still
    /// waiting for a chunk, or from those a chunk already had.
    @Test func envelopesCompressedAheadAreEachEnvelopeInOrderAfterASavepointTookSomeBack() throws {
        let compression = EnvelopeCompression(), chunk = EnvelopeCompression.Ahead.chunk
        func envelope(_ n: Int) -> Data { Self.envelopes[n % Self.envelopes.count] + Data(" \(n)".utf8) }
        // (appended, kept, appended again): within what waits, past a chunk given, and back to a chunk's length.
        for (count, keep, more) in [(chunk - 1, chunk / 2, chunk + 7), (2 * chunk + 10, 2 * chunk + 5, chunk + 7),
                                    (3 * chunk, chunk + 3, chunk + 7), (3 * chunk, 3 * chunk, chunk + 7), (chunk, chunk - 6, 6)] {
            let ahead = EnvelopeCompression.Ahead(compression)
            var appended = (0..<count).map(envelope)
            appended.forEach(ahead.append)
            ahead.truncate(to: keep)
            let again = (10_000..<(10_000 + more)).map(envelope)
            again.forEach(ahead.append)
            appended = Array(appended[..<keep]) + again
            let stored = ahead.finish(appended)
            #expect(stored.elementsEqual(appended.map(compression.compact)), "\(count) appended, \(keep) kept, \(more) more")
            #expect(try stored.map(compression.expand).elementsEqual(appended))
        }
    }

    /// Rows from before, and a compressor that failed, hold the JSON itself.
    @Test func jsonStoredAsItIsReadsBackAsItIs() throws {
        for envelope in Self.envelopes { #expect(try EnvelopeCompression().expand(envelope) == envelope) }
    }

    /// Every stored frame depends on the dictionary's bytes: a frame written by the first version
    /// (against the content alone, naming no dictionary) must still read back, whatever changes.
    @Test func aFrameStoredByTheFirstVersionStillReadsBack() throws {
        let stored = try #require(Data(base64Encoded: Self.firstVersionFrame))
        #expect(try EnvelopeCompression().expand(stored) == Self.envelopes[0])
    }

    /// Frames name the dictionary with entropy tables, which is `content` with the tables ahead of
    /// it; a frame naming a dictionary this build does not have is damaged, not misread.
    @Test func framesNameTheDictionaryWithTablesAndAnUnknownOneIsAnError() throws {
        typealias Dictionary = EnvelopeCompression.Dictionary
        let withTables = Dictionary.withTables
        #expect(withTables.withUnsafeBytes { ZSTD_getDictID_fromDict($0.baseAddress, $0.count) } == Dictionary.id)
        #expect(withTables.suffix(Dictionary.content.count) == Dictionary.content)
        let stored = EnvelopeCompression().compact(Self.envelopes[0])
        #expect(stored.withUnsafeBytes { ZSTD_getDictID_fromFrame($0.baseAddress, $0.count) } == Dictionary.id)

        var other = withTables
        other[4] ^= 0x01  // the id, little-endian after the magic number
        let compressor = ZSTD_createCCtx(), dictionary = other.withUnsafeBytes { ZSTD_createCDict($0.baseAddress, $0.count, -1) }
        defer { ZSTD_freeCDict(dictionary); ZSTD_freeCCtx(compressor) }
        var frame = Data(count: 1024)
        let size = frame.withUnsafeMutableBytes { output in
            Self.envelopes[0].withUnsafeBytes { ZSTD_compress_usingCDict(compressor, output.baseAddress, 1024, $0.baseAddress, $0.count, dictionary) }
        }
        frame.count = size
        let error = #expect(throws: StorageError.self) { try EnvelopeCompression().expand(frame) }
        #expect(error?.description.contains("names zstd dictionary \(Dictionary.id ^ 1)") == true)
    }

    /// `envelopes[0]` as the first version stored it.
    static let firstVersionFrame = """
        KLUv/WCYAE0FAMQGNjUwMDAwY2MxNmUyNC02MzI1LTQ2YmMtYmQ0Mi0xMmFhYzlkNTczZGU5OjQzOjQyLjM0NS1iZW5jaDIuMDAwMDU1ZjItMDAwMC00MDAwLTgwMDAwMDAwNDk5\
        OTU6MDk6NDEuMDQzNToyNH19FQAg6wDgAaIMAopvLh1ikOGHlFBhDGwSzMts+44cgGdlW1sBQNztEkFmOM8HUr0jyipERXSfDOQ7AQQ=
        """

    /// A damaged row is an error for whoever reads it, never a crash, and never a huge allocation.
    @Test func damagedFramesAreErrors() throws {
        let compression = EnvelopeCompression()
        let stored = compression.compact(Self.envelopes[0])
        for length in [4, 6, stored.count / 2, stored.count - 1] {
            #expect(throws: StorageError.self) { try compression.expand(stored.prefix(length)) }
        }
        var bitsFlipped = 0, unharmed = 0
        for offset in stored.indices {
            var damaged = stored
            damaged[offset] ^= 0x5A
            if let read = try? compression.expand(damaged) { unharmed += read == Self.envelopes[0] ? 1 : 0 } else { bitsFlipped += 1 }
        }
        #expect(bitsFlipped > 0 && unharmed < stored.count)
        // A frame header that claims 1 GiB of content (single segment, an 8-byte content size).
        var huge = Data(Self.zstdMagic)
        huge.append(contentsOf: [0xE0] + withUnsafeBytes(of: UInt64(1 << 30).littleEndian, Array.init))
        let error = #expect(throws: StorageError.self) { try compression.expand(huge) }
        #expect(error?.description.contains("at most 16 MiB") == true)
    }

    /// Through a store: the file holds frames, and `events.since` serves the envelopes as they were
    /// published, and a row stored as JSON (before compression) as it is.
    @Test func theLogStoresFramesAndServesTheEnvelopesAsPublished() throws {
        let store = try SQLiteStore(directory: temporaryDirectory("lht-envelopes"), name: "store", migrations: [],
                                    logger: quietLogger("store"))
        var published: [Data] = []
        for n in 0..<3 {
            let start = Instant(secondsSince1970: 1_780_000_000 + Int64(n) * 3600)
            let session = StoredSession(id: RecordID(), userId: UserID("ada")!, activity: .mindfulness, start: start,
                                        end: start.adding(seconds: 600), source: n == 1 ? "Zeit für dich 🌿" : nil, loggedAt: start)
            try store.write(now: start, { tx in
                try tx.append(Events.sessionLogged, userId: session.userId, activity: .mindfulness, data: session)
            }, committed: { tx in published += tx.events.map(\.envelope) })
        }
        try store.database.write { db in
            try db.execute(sql: "INSERT INTO outbox (seq, topic, envelope) VALUES (4, 'session.logged.bench2.mindfulness', ?)",
                           arguments: [Self.envelopes[0]])
        }
        published.append(Self.envelopes[0])
        let stored = try store.read { try Data.fetchAll($0, sql: "SELECT envelope FROM outbox ORDER BY seq") }
        #expect(stored.map { Array($0.prefix(4)) == Self.zstdMagic } == [true, true, true, false])
        let since = try store.query { try store.eventLog.since(EventsSinceRequest(after: 0, limit: 10), for: nil, publisher: .sessionLogger, in: $0) }
        let expected = Data(#"{"events":["#.utf8) + published.joined(separator: Data(",".utf8))
        #expect(since.prefix(expected.count) == expected)
        #expect(try WireJSON.decode(EventsSinceReply.self, from: since).events.count == 4)
    }

    /// An older build would misread what a newer one stored (one from before compression serves
    /// the frames as JSON), so a file that a newer build migrated is refused, not misread. With a
    /// projection: its file, attached, records migrations of its own, which are not the log's.
    @Test func aFileFromANewerBuildIsRefused() throws {
        let directory = temporaryDirectory("lht-newer")
        func open() throws -> SQLiteStore {
            try SQLiteStore(directory: directory, name: "store", migrations: [], projection: ProjectionTests.projection, logger: quietLogger("store"))
        }
        let store = try open()
        store.close()
        let reopened = try open()
        try reopened.database.write { try $0.execute(sql: "INSERT INTO main.grdb_migrations (identifier) VALUES ('from a newer build')") }
        reopened.close()
        let error = #expect(throws: StorageError.self) { try open() }
        #expect(error?.description.contains("newer build") == true)
    }
}
