import Foundation
import GRDB
import LHTClient
import LHTSchema
import ServiceTestSupport
import SQLiteStorage
import Storage
import Testing
import TestSupport
import ZeroMQ

/// The session logger library in-process, over real sockets, called by catalog op.
@Suite struct SessionLoggerServiceTests {
    /// A mindfulness session that ended `minutesAgo` minutes ago and lasted 15 minutes.
    static func session(_ userId: String = "henning", id: RecordID? = nil, minutesAgo: Int64 = 60) -> SessionLogRequest {
        let end = Instant.now().adding(seconds: -minutesAgo * 60)
        return SessionLogRequest(id: id, userId: user(userId), activity: .mindfulness, start: end.adding(seconds: -900), end: end)
    }

    @Test(arguments: Transport.allCases, Backend.allCases)
    func logsASessionAndPublishesItWithTheNextSeq(_ transport: Transport, _ backend: Backend) throws {
        let rig = try ServiceRig(transport, backend: backend)
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let events = try rig.recorder(logger)

        let first = try client.call(Ops.sessionLog, Self.session())
        let request = Self.session(minutesAgo: 30)
        let second = try client.call(Ops.sessionLog, request)
        #expect(!first.duplicate && !second.duplicate)
        #expect([first.seq, second.seq] == [1, 2])

        let logged = try events.wait(for: Events.sessionLogged, count: 2)
        #expect(logged.map(\.seq) == [1, 2])
        #expect(logged.allSatisfy { $0.source == "session-logger" })
        let event = try #require(logged.last)
        #expect(event.topic == Events.sessionLogged.topic(userId: user("henning"), activity: .mindfulness).description)
        guard case .sessionLogged(let stored) = event.data else {
            Issue.record("session.logged carries \(String(describing: event.data))")
            return
        }
        #expect(stored.id == second.id)
        #expect(stored.start == request.start && stored.end == request.end && stored.userId == request.userId)
        #expect(try client.call(Ops.health, NoFields()).lastSeq == 2)
    }

    @Test(arguments: Backend.allCases)
    func aDuplicateIdGetsTheFirstReceiptAndNoSecondEvent(_ backend: Backend) throws {
        let rig = try ServiceRig(backend: backend)
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let request = Self.session(id: RecordID())

        let first = try client.call(Ops.sessionLog, request)
        let again = try client.call(Ops.sessionLog, request)
        #expect(!first.duplicate)
        #expect(again.duplicate)
        #expect(again.id == first.id && again.seq == first.seq)
        // The same id with other content is a conflict, not a second session.
        let changed = SessionLogRequest(id: request.id, userId: request.userId, activity: .workout, start: request.start, end: request.end)
        let conflict = try client.refusal(Ops.sessionLog, changed)
        #expect(conflict.code == .conflict && conflict.field == "data.id")

        let since = try client.call(Ops.eventsSince, EventsSinceRequest(after: 0))
        #expect(since.lastSeq == 1)
        #expect(since.events.map(\.seq) == [1])
    }

    /// Requests sent together, so they share turns: a repeated id within the batch gets the first
    /// receipt and other content a conflict, and a list after a log sees it (read-your-writes, with
    /// the embedded store's tables applied behind the log). After a restart the same ids are told
    /// again from what the logger loaded at start.
    @Test(arguments: Backend.allCases)
    func repeatedIdsAreToldWithinABatchAndAfterARestart(_ backend: Backend) throws {
        let rig = try ServiceRig(.tcp, backend: backend)
        var logger = try rig.sessionLogger()
        let session = Self.session(id: RecordID()), other = Self.session(id: RecordID(), minutesAgo: 30)
        let changed = SessionLogRequest(id: session.id, userId: session.userId, activity: .workout, start: session.start, end: session.end)
        let today = Instant.now().local(in: ZoneID.utc).day
        let entry = NoAlcLogRequest(id: RecordID(), userId: user("henning"), day: today, level: .easy)
        let otherLevel = NoAlcLogRequest(id: entry.id, userId: entry.userId, day: today, level: .wild)
        let list = SessionListRequest(userId: user("henning"), from: session.start.adding(seconds: -60), until: Instant.now())
        let frames = try [
            WireJSON.encode(RequestFrame(op: Ops.sessionLog.name, data: session)),
            WireJSON.encode(RequestFrame(op: Ops.sessionLog.name, data: session)),
            WireJSON.encode(RequestFrame(op: Ops.sessionLog.name, data: changed)),
            WireJSON.encode(RequestFrame(op: Ops.noalcLog.name, data: entry)),
            WireJSON.encode(RequestFrame(op: Ops.sessionList.name, data: list)),
            WireJSON.encode(RequestFrame(op: Ops.noalcLog.name, data: otherLevel)),
            WireJSON.encode(RequestFrame(op: Ops.noalcLog.name, data: entry)),
            WireJSON.encode(RequestFrame(op: Ops.sessionLog.name, data: other)),
        ]
        let dealer = try rig.socket(.dealer)
        try dealer.setReceiveTimeout(milliseconds: 10_000)
        try dealer.connect(logger.api)
        for frame in frames { _ = try dealer.send(multipart: [Data(), frame]) }
        let replies = try frames.map { _ in try #require(try dealer.receiveMultipart()).last ?? Data() }
        func receipt(_ reply: Data) throws -> [Int64] {
            let receipt = try #require(try WireJSON.decode(ReplyFrame<LogReceipt>.self, from: reply).data)
            return [receipt.seq, receipt.duplicate ? 1 : 0]
        }
        func code(_ reply: Data) throws -> ErrorCode? { try WireJSON.decode(ReplyFrame<NoFields>.self, from: reply).error?.code }
        #expect(try [receipt(replies[0]), receipt(replies[1]), receipt(replies[3]), receipt(replies[6]), receipt(replies[7])]
            == [[1, 0], [1, 1], [2, 0], [2, 1], [3, 0]])
        #expect(try [code(replies[2]), code(replies[5])] == [.conflict, .conflict])
        let listed = try #require(try WireJSON.decode(ReplyFrame<SessionListReply>.self, from: replies[4]).data)
        #expect(listed.sessions.map(\.id) == [session.id])

        logger.stop()
        logger = try rig.sessionLogger(restarting: logger)
        let client = rig.client(logger)
        #expect(try client.call(Ops.sessionLog, session).seq == 1 && client.call(Ops.sessionLog, other).seq == 3)
        #expect(try client.call(Ops.noalcLog, entry).duplicate)
        #expect(try client.refusal(Ops.sessionLog, changed).code == .conflict)
        #expect(try client.refusal(Ops.noalcLog, otherLevel).code == .conflict)
        let third = Self.session(id: RecordID(), minutesAgo: 10)
        #expect(try client.call(Ops.sessionLog, third).seq == 4)
        #expect(try client.call(Ops.sessionList, list).sessions.map(\.id) == [session.id, other.id, third.id].compactMap { $0 })
    }

    /// Ids are compared whole: ids made in the same millisecond share their first 48 bits (a version 7
    /// id's time) and are different records. A NoAlc entry's id is idempotent as a session's.
    @Test(arguments: Backend.allCases)
    func idsThatShareTheirFirst48BitsAreDifferentRecords(_ backend: Backend) throws {
        let rig = try ServiceRig(backend: backend)
        let client = rig.client(try rig.sessionLogger())
        let ids = try ["0190a1b2-c3d4-7000-8000-000000000001", "0190a1b2-c3d4-7000-8000-000000000002",
                       "0190a1b2-c3d4-7000-8000-000000000003", "0190a1b2-c3d4-7000-8000-000000000004"].map { try #require(RecordID($0)) }
        let first = Self.session(id: ids[0]), second = Self.session(id: ids[1], minutesAgo: 30)
        #expect(try [first, second].map { try client.call(Ops.sessionLog, $0) }.map { [$0.seq, $0.duplicate ? 1 : 0] } == [[1, 0], [2, 0]])
        #expect(try client.call(Ops.sessionLog, second).seq == 2)
        #expect(try client.call(Ops.sessionLog, first).duplicate)
        let changed = SessionLogRequest(id: ids[1], userId: first.userId, activity: .workout, start: second.start, end: second.end)
        #expect(try client.refusal(Ops.sessionLog, changed).code == .conflict)

        let today = Instant.now().local(in: ZoneID.utc).day
        let entries = [NoAlcLogRequest(id: ids[2], userId: user("henning"), day: today, level: .easy),
                       NoAlcLogRequest(id: ids[3], userId: user("henning"), day: today, level: .wild)]
        #expect(try entries.map { try client.call(Ops.noalcLog, $0) }.map { [$0.seq, $0.duplicate ? 1 : 0] } == [[3, 0], [4, 0]])
        let again = try client.call(Ops.noalcLog, entries[0])
        #expect(again.duplicate && again.seq == 3)
        let other = NoAlcLogRequest(id: ids[3], userId: user("henning"), day: today, level: .steady)
        #expect(try client.refusal(Ops.noalcLog, other).code == .conflict)
        #expect(try client.call(Ops.health, NoFields()).lastSeq == 4)
    }

    @Test(arguments: Backend.allCases)
    func aStartMoreThanFiveMinutesAheadIsInvalidArgumentNamingDataStart(_ backend: Backend) throws {
        let rig = try ServiceRig(backend: backend)
        let logger = try rig.sessionLogger()
        let client = rig.client(logger)
        let start = Instant.now().adding(seconds: 10 * 60)
        let error = try client.refusal(Ops.sessionLog, SessionLogRequest(userId: user("henning"), activity: .workout,
                                                                         start: start, end: start.adding(seconds: 600)))
        #expect(error.code == .invalidArgument)
        #expect(error.field == "data.start")
        // Refused means not stored: no event, nothing listed.
        #expect(try client.call(Ops.health, NoFields()).lastSeq == 0)
        let listed = try client.call(Ops.sessionList, SessionListRequest(userId: user("henning"), from: start.adding(seconds: -3600),
                                                                        until: start.adding(seconds: 3600)))
        #expect(listed.sessions.isEmpty)
    }

    /// Fire-and-forget intake (PUB → the logger's SUB): sent until it shows up, which is safe because
    /// a session is idempotent by id; it is stored and published exactly once.
    @Test(arguments: Backend.allCases)
    func intakeStoresAFireAndForgetSessionOnce(_ backend: Backend) throws {
        let rig = try ServiceRig(backend: backend)
        let logger = try rig.sessionLogger()
        let intake = try #require(logger.endpoints["intake"])
        let events = try rig.recorder(logger)
        let publisher = try rig.socket(.pub)
        try publisher.connect(intake)
        let request = Self.session(id: RecordID())
        let frame = try WireJSON.encode(RequestFrame(op: Ops.sessionLog.name, data: request))

        try waitUntil("the intake session's event") {
            try publisher.send(multipart: [Data("intake".utf8), frame])
            return try !events.settle(for: 0.05).filter { $0.type == Events.sessionLogged.name }.isEmpty
        }
        let logged = events.of(Events.sessionLogged)
        #expect(logged.count == 1)
        guard case .sessionLogged(let stored) = logged.first?.data else {
            Issue.record("no session.logged data")
            return
        }
        #expect(stored.id == request.id)
        let health = try rig.client(logger).call(Ops.health, NoFields())
        #expect(health.lastSeq == 1)
        #expect((health.counters["intakeAccepted"] ?? 0) >= 1)
        #expect(health.counters["intakeRejected"] == 0)
    }
}

/// The embedded store's projection, applied behind the log from the values the loop hands over, holds
/// what a rebuild from the log's envelopes does.
@Suite struct SessionLoggerProjectionTests {
    @Test func aProjectionRebuiltFromTheLogAnswersAsTheLivePathDid() throws {
        let rig = try ServiceRig(.inproc)
        let directory = rig.scratch.subdirectory("session-logger-rebuild").path
        var logger = try rig.sessionLogger(dataDirectory: directory)
        var client = rig.client(logger)
        let end = Instant.now().adding(seconds: -3600)
        let sessions = [SessionLogRequest(id: RecordID(), userId: user("henning"), activity: .workout, start: end.adding(seconds: -1800), end: end,
                                          source: "watch"),
                        SessionLogRequest(userId: user("henning"), activity: .mindfulness, start: end.adding(seconds: -7200),
                                          end: end.adding(seconds: -6600))]
        let today = Instant.now().local(in: ZoneID.utc).day
        let entries = [NoAlcLogRequest(userId: user("henning"), day: today, level: .easy),
                       NoAlcLogRequest(userId: user("henning"), day: today, level: .wild, source: "cli")]
        for session in sessions { _ = try client.call(Ops.sessionLog, session) }
        for entry in entries { _ = try client.call(Ops.noalcLog, entry) }
        func answers() throws -> [String] {
            try [
                WireJSON.encode(client.call(Ops.sessionList, SessionListRequest(userId: user("henning"), from: end.adding(seconds: -86_400),
                                                                                     until: end))),
                WireJSON.encode(client.call(Ops.noalcList, DayRangeRequest(userId: user("henning"), from: today.adding(days: -1), until: today))),
                WireJSON.encode(client.call(Ops.dailySummary, DailySummaryRequest(userId: user("henning"), from: today.adding(days: -1),
                                                                                       until: today, timeZone: .utc))),
            ].map { String(decoding: $0, as: UTF8.self) }
        }
        let live = try answers()
        #expect(live[0].contains("watch") && live[1].contains("wild") && live[1].contains("cli"))
        logger.stop()
        for suffix in ["", "-journal"] { try? FileManager.default.removeItem(atPath: directory + "/session-logger.projection.sqlite" + suffix) }

        logger = try rig.sessionLogger(restarting: logger, dataDirectory: directory)
        client = rig.client(logger)
        #expect(try answers() == live)
        #expect(try client.call(Ops.sessionLog, sessions[0]).duplicate)
    }
}

/// A file from before the sessions became a projection of the log (its tables in the log's file).
@Suite struct SessionLoggerUpgradeTests {
    @Test func aFileWithTheTablesBesideTheLogKeepsEverySessionAndEntry() throws {
        let rig = try ServiceRig(.inproc)
        let directory = rig.scratch.subdirectory("session-logger-upgrade")
        let start = try #require(Instant(rfc3339: "2026-03-01T08:00:00Z"))
        let session = StoredSession(id: RecordID(), userId: user("henning"), activity: .workout, start: start,
                                    end: start.adding(seconds: 1800), source: "watch", loggedAt: start.adding(seconds: 1900))
        let entry = StoredNoAlcEntry(id: RecordID(), userId: user("henning"), day: day("2026-03-01"), level: .easy, source: nil,
                                     loggedAt: start.adding(seconds: 2000))
        // The layout as the logger wrote it until now: outbox, identity and both tables in one file.
        let old = try DatabaseQueue(path: directory.appendingPathComponent("session-logger.sqlite").path)
        var migrator = DatabaseMigrator()
        migrator.register(EventLog.sqliteMigrations)
        migrator.registerMigration("sessions") { db in
            try db.execute(sql: """
                CREATE TABLE session (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, activity TEXT NOT NULL, start_ms INTEGER NOT NULL,
                    end_ms INTEGER NOT NULL, source TEXT, logged_at_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX session_by_user_start ON session (user_id, start_ms);
                CREATE TABLE noalc_entry (id TEXT PRIMARY KEY NOT NULL, user_id TEXT NOT NULL, day TEXT NOT NULL, level TEXT NOT NULL,
                    source TEXT, logged_at_ms INTEGER NOT NULL, seq INTEGER NOT NULL);
                CREATE INDEX noalc_by_user_day ON noalc_entry (user_id, day, seq);
                """)
        }
        try migrator.migrate(old)
        try old.write { db in
            try db.execute(sql: "INSERT INTO session VALUES (?, 'henning', 'workout', ?, ?, 'watch', ?, 1)", arguments: [
                session.id.description, session.start.millisecondsSince1970, session.end.millisecondsSince1970, session.loggedAt.millisecondsSince1970])
            try db.execute(sql: "INSERT INTO noalc_entry VALUES (?, 'henning', '2026-03-01', 'easy', NULL, ?, 2)", arguments: [
                entry.id.description, entry.loggedAt.millisecondsSince1970])
            for (seq, type, topic, data) in [
                (Int64(1), Events.sessionLogged.name, Events.sessionLogged.topic(userId: session.userId, activity: .workout).description,
                 try WireJSON.encode(session)),
                (2, Events.noalcLogged.name, Events.noalcLogged.topic(userId: entry.userId, activity: .noalc).description, try WireJSON.encode(entry)),
            ] {
                let envelope = EventEnvelope<StoredSession>.frame(type: type, seq: seq, time: start, source: "session-logger", topic: topic, encodedData: data)
                try db.execute(sql: "INSERT INTO outbox (seq, topic, envelope) VALUES (?, ?, ?)", arguments: [seq, topic, envelope])
            }
        }
        try old.close()

        let logger = try rig.sessionLogger(dataDirectory: directory.path)
        let client = rig.client(logger)
        #expect(try client.call(Ops.sessionList, SessionListRequest(userId: user("henning"), from: start, until: start.adding(seconds: 86_400)))
            .sessions == [session])
        #expect(try client.call(Ops.noalcList, DayRangeRequest(userId: user("henning"), from: day("2026-03-01"), until: day("2026-03-01")))
            .entries == [entry])
        // The same session again is the same receipt, and the log goes on from its last seq.
        let again = try client.call(Ops.sessionLog, SessionLogRequest(id: session.id, userId: session.userId, activity: .workout,
                                                                      start: session.start, end: session.end, source: "watch"))
        #expect(again.duplicate && again.seq == 1)
        #expect(try client.call(Ops.sessionLog, SessionLoggerServiceTests.session()).seq == 3)
        #expect(logger.stop())
        // The log moved into a file of its own (`EventFileStore`), and the SQLite file is gone.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.contains("session-logger.events") && !files.contains { $0.hasPrefix("session-logger.sqlite") }, "\(files)")
    }
}
