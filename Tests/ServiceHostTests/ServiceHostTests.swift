import Foundation
import LHTSchema
import Logging
import Testing
@testable import ServiceHost

/// The host in-process on a real SQLite file: the outbox, transactions and request handling.
@Suite struct ServiceHostTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lht-host-\(UUID().uuidString.prefix(8))")

    func makeHost() throws -> ServiceHost {
        try ServiceHost(name: "test-service", apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                        dataDirectory: directory, migrations: { _ in }, logger: Logger(label: "test"))
    }

    struct Note: Codable, Sendable, Equatable { let n: Int }

    func append(_ host: ServiceHost, _ values: [Int]) throws -> [Int64] {
        try host.write { tx in try values.map { try tx.append(type: "note.added", userId: UserID("u1")!, activity: .workout, data: Note(n: $0)) } }
    }

    /// `events.since` through the host's own request path.
    func since(_ host: ServiceHost, after: Int64, limit: Int) throws -> EventsSinceReply<Note> {
        let frame = Data(#"{"v":1,"op":"events.since","data":{"after":\#(after),"limit":\#(limit)}}"#.utf8)
        let reply = try JSONDecoder().decode(ReplyFrame<EventsSinceReply<Note>>.self, from: host.process([frame])[0])
        return try #require(reply.data)
    }

    @Test func seqIsGapFreeAcrossRollbacksAndReopening() throws {
        var host = try makeHost()
        #expect(try append(host, [1, 2, 3]) == [1, 2, 3])
        // A transaction that fails leaves no event and no hole.
        #expect(throws: WireError.self) {
            try host.write { tx in
                try tx.append(type: "note.added", userId: UserID("u1")!, activity: .workout, data: Note(n: 99))
                throw WireError(.conflict, "no")
            }
        }
        // A savepoint that fails inside a transaction that commits: its event is gone too.
        try host.write { tx in
            try tx.append(type: "note.added", userId: UserID("u1")!, activity: .workout, data: Note(n: 4))
            _ = try? tx.isolated { () throws -> Void in
                try tx.append(type: "note.added", userId: UserID("u1")!, activity: .workout, data: Note(n: 98))
                throw WireError(.conflict, "no")
            }
            // A nested write joins this transaction rather than deadlocking on it.
            try host.write { inner in try inner.append(type: "note.added", userId: UserID("u1")!, activity: .workout, data: Note(n: 5)) }
        }
        #expect(host.eventLog.lastSeq == 5)

        host = try makeHost()  // reopened on the same file
        #expect(host.eventLog.lastSeq == 5)
        #expect(try append(host, [6, 7]) == [6, 7])
        let all = try since(host, after: 0, limit: 1000)
        #expect(all.events.map(\.seq) == Array(1...7))
        #expect(all.events.map(\.data.n) == Array(1...7))
        #expect(all.events.allSatisfy { $0.topic == "note.added.u1.workout" && $0.source == "test-service" })
    }

    @Test func eventsSincePagesWithLimit() throws {
        let host = try makeHost()
        _ = try append(host, Array(1...25))
        var after: Int64 = 0
        var pages: [[Int64]] = []
        while true {
            let page = try since(host, after: after, limit: 10)
            #expect(page.lastSeq == 25)
            guard let last = page.events.last else { break }
            pages.append(page.events.map(\.seq))
            after = last.seq
        }
        #expect(pages == [Array(1...10), Array(11...20), Array(21...25)])
    }

    @Test func aFailingRequestChangesNothingAndTheBatchGoesOn() throws {
        let host = try makeHost()
        host.handle("note.add") { request in
            let note = try request.decode(Note.self)
            try request.tx.append(type: "note.added", userId: UserID("u1")!, activity: .workout, data: note)
            guard note.n >= 0 else { throw WireError.invalid("data.n", "must not be negative") }
            return try replyData(note)
        }
        let frames = [1, -1, 2].map { Data(#"{"v":1,"op":"note.add","data":{"n":\#($0)}}"#.utf8) }
            + [Data("{".utf8), Data(#"{"v":1,"op":"nope"}"#.utf8)]
        let replies = try host.process(frames).map { try JSONDecoder().decode(ReplyFrame<Note>.self, from: $0) }
        #expect(replies.map(\.ok) == [true, false, true, false, false])
        #expect(replies.compactMap(\.error?.code) == [.invalidArgument, .badJSON, .unknownOp])
        #expect(replies[1].error?.field == "data.n")
        #expect(try since(host, after: 0, limit: 10).events.map(\.data.n) == [1, 2])
    }

    @Test func environmentFillsFlagsNotGiven() {
        let arguments = ServiceCommandLine.withEnvironment(
            ["--api", "tcp://127.0.0.1:1", "--events=tcp://127.0.0.1:2"], flags: ["api", "events", "data-dir", "time-zone"],
            environment: ["LHT_API": "tcp://127.0.0.1:9", "LHT_DATA_DIR": "/tmp/x", "LHT_TIME_ZONE": "Europe/Berlin"])
        #expect(arguments == ["--api", "tcp://127.0.0.1:1", "--events=tcp://127.0.0.1:2", "--data-dir=/tmp/x", "--time-zone=Europe/Berlin"])
    }

    @Test(arguments: ["tcp://127.0.0.1:7301", "tcp://127.0.0.1:*", "tcp://[::1]:7301", "ipc:///tmp/lht.sock", "inproc://x"])
    func usableEndpoints(_ endpoint: String) throws {
        #expect(try Endpoint.validated(endpoint, flag: "api") == endpoint)
    }

    @Test(arguments: ["", "127.0.0.1:7301", "http://127.0.0.1:7301", "tcp://127.0.0.1", "tcp://127.0.0.1:0", "tcp://:7301", "tcp://h:70000", "ipc://"])
    func unusableEndpoints(_ endpoint: String) {
        #expect(throws: (any Error).self) { try Endpoint.validated(endpoint, flag: "api") }
    }
}
