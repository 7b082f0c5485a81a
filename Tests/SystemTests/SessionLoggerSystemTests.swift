import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// The real `session-logger` executable, over real ZeroMQ sockets, on a real SQLite file.
@Suite struct SessionLoggerSystemTests {
    let context: Context
    let logger: ServiceProcess
    let client: WireClient

    init() throws {
        context = try Context()
        logger = try ServiceProcess("session-logger")
        client = try WireClient(logger.api, context: context)
    }

    /// A session that ended `minutesAgo` minutes ago and lasted `minutes`.
    func session(_ user: String = "henning", _ activity: String = "mindfulness", minutesAgo: Int = 60, minutes: Int = 15,
                 id: String? = nil) -> [String: Any] {
        let end = Instant.now().adding(seconds: Int64(-minutesAgo * 60))
        var data: [String: Any] = ["userId": user, "activity": activity, "start": end.adding(seconds: Int64(-minutes * 60)).description,
                                   "end": end.description, "source": "test"]
        if let id { data["id"] = id }
        return data
    }

    @Test func sessionIsAcknowledgedPublishedAndListed() throws {
        let subscriber = try EventSubscriber(logger.events, context: context, prefixes: ["session.logged.henning."])
        let receipt = try client.ok("session.log", session())
        #expect(receipt["duplicate"]?.boolValue == false)
        #expect(receipt["seq"]?.intValue == 1)

        let events = try subscriber.receive(1)
        #expect(events.first?.topic == "session.logged.henning.mindfulness")
        #expect(events.first?.envelope["seq"]?.intValue == 1)
        #expect(events.first?.envelope["data"]?["id"] == receipt["id"])
        #expect(events.first?.envelope["source"]?.stringValue == "session-logger")

        let now = Instant.now()
        let listed = try client.ok("session.list", ["userId": "henning", "from": now.adding(seconds: -86_400).description,
                                                    "until": now.description])
        #expect(listed["sessions"]?.arrayValue.map { $0["id"] } == [receipt["id"]])
        let since = try client.ok("events.since", ["after": 0])
        #expect(since["events"]?[0] == events.first?.envelope)
        #expect(since["lastSeq"]?.intValue == 1)
    }

    @Test func repeatedIdReturnsFirstResultAndPublishesNothing() throws {
        let id = "3F2B8C1E-0000-4000-8000-0000000000AA"
        var data = session(id: id)
        let first = try client.ok("session.log", data)
        let subscriber = try EventSubscriber(logger.events, context: context)
        data["id"] = id.lowercased()
        let again = try client.ok("session.log", data)
        #expect(again["duplicate"]?.boolValue == true)
        #expect(again["seq"] == first["seq"])
        #expect(again["id"]?.stringValue == id.lowercased())
        #expect(try subscriber.receive(1, timeout: 0.5).isEmpty)
        #expect(try client.failure("session.log", session(minutesAgo: 30, id: id)) == ("conflict", "data.id"))
        #expect(try client.ok("health")["lastSeq"]?.intValue == 1)
    }

    @Test func latestNoAlcEntryForADayWins() throws {
        let subscriber = try EventSubscriber(logger.events, context: context, prefixes: ["noalc.logged."])
        _ = try client.ok("noalc.log", ["userId": "henning", "day": "2026-11-20", "level": "wild"])
        let correction = try client.ok("noalc.log", ["userId": "henning", "day": "2026-11-20", "level": "steady"])
        _ = try client.ok("noalc.log", ["userId": "henning", "day": "2026-11-21", "level": "easy"])
        let entries = try client.ok("noalc.list", ["userId": "henning", "from": "2026-11-20", "until": "2026-11-21"])["entries"]!.arrayValue
        #expect(entries.map { $0["level"]?.stringValue } == ["steady", "easy"])
        #expect(entries.map { $0["drinks"]?.intValue } == [0, 4])
        #expect(entries[0]["id"] == correction["id"])
        // Every entry, the correction too, is published on the noalc topic with gap-free seqs.
        let events = try subscriber.receive(3)
        #expect(events.map(\.topic) == Array(repeating: "noalc.logged.henning.noalc", count: 3))
        #expect(events.map { $0.envelope["seq"]?.intValue } == [1, 2, 3])
    }

    @Test func dailySummaryCountsSessionsOnTheLocalDayTheyStart() throws {
        // 23:30–00:30 Berlin time on 2026-11-20/21: all 60 minutes count on the 20th.
        _ = try client.ok("session.log", ["userId": "ute", "activity": "workout", "start": "2026-11-20T23:30:00+01:00", "end": "2026-11-21T00:30:00+01:00"])
        _ = try client.ok("session.log", ["userId": "ute", "activity": "mindfulness", "start": "2026-11-21T07:00:00Z", "end": "2026-11-21T07:10:30Z"])
        _ = try client.ok("noalc.log", ["userId": "ute", "day": "2026-11-21", "level": "easy"])
        let days = try client.ok("daily.summary", ["userId": "ute", "from": "2026-11-20", "until": "2026-11-22", "timeZone": "Europe/Berlin"])["days"]!.arrayValue
        #expect(days.map { $0["day"]?.stringValue } == ["2026-11-20", "2026-11-21", "2026-11-22"])
        #expect(days.map { $0["workoutMinutes"]?.intValue } == [60, 0, 0])
        #expect(days.map { $0["mindfulnessMinutes"]?.intValue } == [0, 11, 0])
        #expect(days.map { $0["noalc"] } == [.null, .string("easy"), .null])
        // In UTC the workout starts on the 20th at 22:30 too, but in Tokyo on the 21st.
        let tokyo = try client.ok("daily.summary", ["userId": "ute", "from": "2026-11-21", "until": "2026-11-21", "timeZone": "Asia/Tokyo"])
        #expect(tokyo["days"]?[0]?["workoutMinutes"]?.intValue == 60)
    }

    @Test(arguments: [
        ("session.log", ["activity": "mindfulness", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:10:00Z"], "data.userId"),
        ("session.log", ["userId": "a.b", "activity": "mindfulness", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:10:00Z"], "data.userId"),
        ("session.log", ["userId": "u1", "activity": "noalc", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:10:00Z"], "data.activity"),
        ("session.log", ["userId": "u1", "activity": "yoga", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:10:00Z"], "data.activity"),
        ("session.log", ["userId": "u1", "activity": "workout", "start": "2026-11-20 10:00", "end": "2026-11-20T10:10:00Z"], "data.start"),
        ("session.log", ["userId": "u1", "activity": "workout", "start": "2026-11-20T10:00:00", "end": "2026-11-20T10:10:00Z"], "data.start"),
        ("session.log", ["userId": "u1", "activity": "workout", "start": 5, "end": "2026-11-20T10:10:00Z"], "data.start"),
        ("session.log", ["userId": "u1", "activity": "workout", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T09:59:59Z"], "data.end"),
        ("session.log", ["userId": "u1", "activity": "workout", "start": "2026-11-20T10:00:00Z", "end": "2026-11-21T10:00:01Z"], "data.end"),
        ("session.log", ["userId": "u1", "activity": "workout", "start": "2099-11-20T10:00:00Z", "end": "2099-11-20T10:10:00Z"], "data.start"),
        ("session.log", ["id": "not-a-uuid", "userId": "u1", "activity": "workout", "start": "2026-11-20T10:00:00Z", "end": "2026-11-20T10:10:00Z"], "data.id"),
        ("noalc.log", ["userId": "u1", "day": "2026-02-30", "level": "easy"], "data.day"),
        ("noalc.log", ["userId": "u1", "day": "2026-11-20", "level": "tipsy"], "data.level"),
        ("session.list", ["userId": "u1", "from": "2026-11-20T10:00:00Z", "until": "2026-11-19T10:00:00Z"], "data.until"),
        ("noalc.list", ["userId": "u1", "from": "2026-11-20"], "data.until"),
        ("daily.summary", ["userId": "u1", "from": "2026-01-01", "until": "2027-01-02", "timeZone": "Europe/Berlin"], "data.until"),
        ("daily.summary", ["userId": "u1", "from": "2026-01-01", "until": "2026-01-02", "timeZone": "Mars/Olympus"], "data.timeZone"),
        ("events.since", ["limit": 1001], "data.limit"),
        ("events.since", ["after": -1], "data.after"),
    ] as [(String, [String: any Sendable], String)])
    func invalidRequestsNameTheFieldAndChangeNothing(op: String, data: [String: any Sendable], field: String) throws {
        let failure = try client.failure(op, data)
        #expect(failure.code == "invalid_argument")
        #expect(failure.field == field)
        #expect(try client.ok("health")["lastSeq"]?.intValue == 0)
    }

    @Test func envelopeErrorsFollowTheProtocol() throws {
        func error(_ frame: String) throws -> JSONValue? {
            try JSONDecoder().decode(JSONValue.self, from: client.raw(Data(frame.utf8)))["error"]
        }
        #expect(try error("not json")?["code"]?.stringValue == "bad_json")
        #expect(try error("[1,2]")?["code"]?.stringValue == "bad_json")
        #expect(try error(#"{"op":"health"}"#)?["code"]?.stringValue == "unsupported_version")
        #expect(try error(#"{"v":2,"op":"health"}"#)?["code"]?.stringValue == "unsupported_version")
        #expect(try error(#"{"v":1}"#)?["field"]?.stringValue == "op")
        #expect(try error(#"{"v":1,"op":7}"#)?["field"]?.stringValue == "op")
        #expect(try error(#"{"v":1,"op":"reminder.put","data":{}}"#)?["code"]?.stringValue == "unknown_op")
        let health = try client.ok("health")
        #expect(health["service"]?.stringValue == "session-logger")
    }

    @Test func malformedFramesEachGetAnErrorAndStateIsUnchanged() throws {
        _ = try client.ok("noalc.log", ["userId": "keep", "day": "2026-11-20", "level": "steady"])
        let before = try client.ok("events.since", [:])
        var random = SplitMix64(seed: 0x5E55_1017)
        var frames: [Data] = [
            Data([0xFF, 0xFE, 0xFD]),
            Data(repeating: UInt8(ascii: "["), count: 1 << 20),
            // Just under the 1 MiB a request may have (a larger one is answered from its size: RequestSizeSystemTests).
            Data(("{\"v\":1,\"op\":\"session.log\",\"data\":{\"userId\":\"" + String(repeating: "x", count: (1 << 20) - 64) + "\"}}").utf8),
            Data(String(repeating: "{\"a\":", count: 50_000).utf8),
            Data(#"{"v":1,"op":"session.log","data":{"userId":["u1"],"activity":{},"start":null,"end":1e400}}"#.utf8),
            Data(#"{"v":1,"op":"noalc.log","data":"steady"}"#.utf8),
        ]
        let valid = Array(#"{"v":1,"op":"noalc.log","data":{"userId":"keep","day":"2026-11-21","level":"easy"}}"#.utf8)
        while frames.count < 1000 {
            var bytes = valid
            // Mutations that can never yield the valid request: a byte of the level or day changed,
            // the frame truncated, or junk appended.
            switch random.next() % 3 {
            case 0: bytes[bytes.count - 5] = UInt8(ascii: "t") &+ UInt8(random.next() % 200)  // never the "s" of "easy"
            case 1: bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count - 1))))
            default: bytes += [UInt8(ascii: "x")] + (0..<Int(random.next() % 8)).map { _ in UInt8(random.next() % 256) }
            }
            if bytes == valid { continue }
            frames.append(Data(bytes))
        }
        for frame in frames {
            let reply = try JSONDecoder().decode(JSONValue.self, from: client.raw(frame))
            #expect(reply["ok"]?.boolValue == false, "accepted: \(String(decoding: frame.prefix(120), as: UTF8.self))")
            #expect(ErrorCode(rawValue: reply["error"]?["code"]?.stringValue ?? "") != nil)
        }
        #expect(try client.ok("health")["service"]?.stringValue == "session-logger")
        #expect(try client.ok("events.since", [:]) == before)
    }

    @Test func intakeStoresValidMessagesAndCountsRejectedOnes() throws {
        // An XPUB publishes as a PUB does, and shows when the intake's subscription is in: intake is lossy by nature.
        let intake = try Socket(context, .xpub)
        try intake.connect(logger.endpoints["intake"]!)
        try intake.awaitSubscriber()
        let good = #"{"v":1,"op":"noalc.log","data":{"userId":"pyuser","day":"2026-11-21","level":"wild"}}"#
        try intake.send(multipart: [Data("intake".utf8), Data(good.utf8)])
        try intake.send(multipart: [Data("intake".utf8), Data(#"{"v":1,"op":"noalc.log","data":{"userId":"pyuser"}}"#.utf8)])
        try intake.send(multipart: [Data("intake".utf8), Data(#"{"v":1,"op":"session.list","data":{}}"#.utf8)])
        try intake.send(multipart: [Data("other".utf8), Data(good.utf8)])
        var counters: JSONValue?
        try? waitUntil(timeout: 30, interval: 0.1, "three rejected intake messages") {
            counters = try client.ok("health")["counters"]
            return counters?["intakeRejected"]?.intValue == 3
        }
        #expect(counters?["intakeRejected"]?.intValue == 3)
        #expect(counters?["intakeAccepted"]?.intValue == 1)
        let entries = try client.ok("noalc.list", ["userId": "pyuser", "from": "2026-11-21", "until": "2026-11-21"])["entries"]
        #expect(entries?.arrayValue.map { $0["level"]?.stringValue } == ["wild"])
    }

    @Test func sigtermExitsZero() throws {
        #expect(logger.stop() == 0)
    }
}

/// Crash safety needs its own process lifecycle, so it is a suite of its own.
@Suite struct SessionLoggerCrashTests {
    @Test func everyAcknowledgedLogSurvivesSigkillAndSeqContinues() throws {
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        let sender = try Socket(context, .dealer)
        try sender.connect(logger.api)
        // Pipeline requests; kill the service while many are in flight, then keep only what was acked.
        var acknowledged: [String: Int64] = [:]
        let total = 3000
        for n in 0..<total {
            let id = String(format: "00000000-0000-4000-8000-%012d", n)
            let frame = #"{"v":1,"op":"noalc.log","data":{"id":"\#(id)","userId":"crash","day":"2026-11-21","level":"steady"}}"#
            try sender.send(multipart: [Data(), Data(frame.utf8)])
        }
        try sender.setReceiveTimeout(milliseconds: 5000)
        while acknowledged.count < total / 3, let frames = try sender.receiveMultipart() {
            let reply = try JSONDecoder().decode(JSONValue.self, from: frames.last!)
            if let id = reply["data"]?["id"]?.stringValue, let seq = reply["data"]?["seq"]?.intValue { acknowledged[id] = seq }
        }
        logger.kill()
        #expect(acknowledged.count >= total / 3)

        try logger.restart()
        let client = try WireClient(logger.api, context: context)
        var stored: [String: Int64] = [:]
        var after: Int64 = 0
        var lastSeq: Int64 = 0
        repeat {
            let page = try client.ok("events.since", ["after": after, "limit": 1000])
            lastSeq = page["lastSeq"]!.intValue!
            for event in page["events"]!.arrayValue {
                let seq = event["seq"]!.intValue!
                #expect(seq == after + 1, "seq gap or reuse at \(seq)")
                after = seq
                stored[event["data"]!["id"]!.stringValue!] = seq
            }
        } while after < lastSeq
        for (id, seq) in acknowledged { #expect(stored[id] == seq, "acknowledged \(id) lost") }

        // A repeat of an acknowledged id is a duplicate; a new one continues the sequence.
        let known = acknowledged.keys.sorted().first!
        let duplicate = try client.ok("noalc.log", ["id": known, "userId": "crash", "day": "2026-11-21", "level": "steady"])
        #expect(duplicate["duplicate"]?.boolValue == true)
        let fresh = try client.ok("noalc.log", ["userId": "crash", "day": "2026-11-22", "level": "easy"])
        #expect(fresh["seq"]?.intValue == lastSeq + 1)
        #expect(logger.stop() == 0)
    }

    @Test func unusableFlagsExitTwoBeforeBinding() throws {
        for arguments in [["--api", "http://nope"], ["--intake", "tcp://127.0.0.1:notaport"], ["--data-dir", "/proc/forbidden"]] {
            let run = try CapturedProcess(BuildProducts.executable("session-logger").path, arguments).finish()
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        }
    }

    @Test func environmentVariablesConfigureAndFlagsWin() throws {
        let directory = temporaryDirectory()
        var environment = ProcessInfo.processInfo.environment
        environment["LHT_DATA_DIR"] = directory.path
        environment["LHT_EVENTS"] = "tcp://127.0.0.1:*"
        environment["LHT_API"] = "tcp://127.0.0.1:1"  // the flag wins
        let process = try CapturedProcess(BuildProducts.executable("session-logger").path,
                                          ["--api", "tcp://127.0.0.1:*", "--intake=tcp://127.0.0.1:*"], environment: environment)
        try? process.waitForOutput("\n")
        let status = process.terminate()
        let text = process.output
        #expect(text.hasPrefix("ready session-logger api=tcp://127.0.0.1:"))
        #expect(!text.contains("127.0.0.1:1 "))
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("session-logger.events").path))
        #expect(status == 0)
    }
}
