import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// The planner's decisions are applied behind its log from the decision events alone; every other
/// event (`reminder.changed`) writes no row there. Their file's place in the log still moves past
/// them: a start after a clean stop replays nothing, and one after `kill -9` only the tail since the
/// place last stored (in a quiet moment).
@Suite(.disabled(if: SystemTestBackend.isPostgreSQL, "the decisions are applied behind the log on SQLite only"))
struct PlannerRestartCursorSystemTests {
    static let caughtUp = "projection caught up from the log"

    /// The `fromSeq` of each catch-up the planner logged to `log` from `offset` on.
    static func catchUps(in log: URL, from offset: Int) -> [(fromSeq: Int64, events: Int64)] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return text.utf8.dropFirst(offset).split(separator: UInt8(ascii: "\n")).compactMap { line in
            let line = String(decoding: line, as: UTF8.self)
            guard line.contains(caughtUp) else { return nil }
            func value(_ key: String) -> Int64? {
                line.components(separatedBy: " \(key)=").dropFirst().first?.split(separator: " ").first.flatMap { Int64($0) }
            }
            return value("fromSeq").flatMap { from in value("events").map { (from, $0) } }
        }
    }

    static func size(of file: URL) -> Int { ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? Int) ?? 0 }

    func putReminders(_ client: WireClient, users: Range<Int>) throws {
        for user in users {
            _ = try client.ok("user.put", ["userId": "user\(user)", "timeZone": "UTC", "locale": "en"])
            for hour in 10..<15 { _ = try client.ok("reminder.put", ["userId": "user\(user)", "activity": "workout", "time": "\(hour):00"]) }
        }
    }

    @Test(.timeLimit(.minutes(2))) func aStartAfterAStopReplaysNothingAndAfterKill9OnlyTheTail() throws {
        let log = temporaryDirectory("lht-planner-restart").appendingPathComponent("stderr")
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        // Manual clock: nothing comes due, so every event is a reminder's change, which makes no decision row.
        let planner = try ServiceProcess("reminder-planner", arguments: [
            "--session-logger-api", logger.api, "--session-logger-events", logger.events, "--clock", "manual:2026-11-16T08:00:00Z",
        ], environment: ["LHT_LOG_LEVEL": "debug"], errorLog: log)
        try putReminders(try WireClient(planner.api, context: context), users: 0..<40)
        let loaded = try WireClient(planner.api, context: context).ok("health")["lastSeq"]?.intValue ?? 0
        #expect(loaded >= 200)

        // A clean stop: the next start has nothing to replay.
        #expect(planner.stop() == 0)
        var offset = Self.size(of: log)
        try planner.restart()
        _ = try WireClient(planner.api, context: context).ok("health")
        let afterStop = Self.catchUps(in: log, from: offset)
        #expect(afterStop.allSatisfy { $0.fromSeq >= loaded }, "replayed after a clean stop: \(afterStop)")

        // Loaded again, and quiet: the place is stored; a few more, then kill -9 at once.
        let client = try WireClient(planner.api, context: context)
        try putReminders(client, users: 40..<60)
        let quiet = try client.ok("health")["lastSeq"]?.intValue ?? 0
        try waitUntil(timeout: 10, interval: 0.05, "the place \(quiet) stored in a quiet moment: \(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(1000))") {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").utf8.dropFirst(offset).split(separator: UInt8(ascii: "\n"))
                .contains { (String(decoding: $0, as: UTF8.self) + " ").contains("recorded the projection's place in the log appliedSeq=\(quiet) ") }
        }
        try putReminders(client, users: 60..<61)
        let last = try client.ok("health")["lastSeq"]?.intValue ?? 0
        planner.kill()
        _ = planner.stop()
        offset = Self.size(of: log)
        try planner.restart()
        _ = try WireClient(planner.api, context: context).ok("health")
        let afterKill = Self.catchUps(in: log, from: offset)
        #expect(afterKill.allSatisfy { $0.fromSeq >= quiet && $0.events <= last - quiet }, "replayed after kill -9: \(afterKill)")
        #expect(planner.stop() == 0)
    }
}
