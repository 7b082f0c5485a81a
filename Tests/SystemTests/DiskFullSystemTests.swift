import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

/// A full disk is a dependency that is down (PROTOCOL: `unavailable`), not a bug: the real session
/// logger (its log a file of its own) and the real planner (SQLite) on a small tmpfs filled to the
/// last byte answer `unavailable`, naming the disk, lose nothing they acknowledged, and go on by
/// themselves once space is back.
@Suite(SystemTestBackend.onceOnly, .enabled(if: SmallDisk.mountable, "mounting a tmpfs needs root (CAP_SYS_ADMIN)"))
struct DiskFullSystemTests {
    func session(_ index: Int) -> [String: Any] {
        let start = Instant(secondsSince1970: 1_790_000_000 + Int64(index) * 60)
        return ["userId": "henning", "activity": "workout", "start": start.description, "end": start.adding(seconds: 30).description]
    }

    func listed(_ client: WireClient) throws -> Int {
        let listing = try client.call("session.list", ["userId": "henning", "from": Instant(secondsSince1970: 1_780_000_000).description,
                                                       "until": Instant(secondsSince1970: 1_800_000_000).description])
        return listing["data"]?["sessions"]?.arrayValue.count ?? -1
    }

    @Test(.timeLimit(.minutes(2))) func theSessionLoggerAnswersUnavailableOnAFullDiskAndGoesOnOnceSpaceIsBack() throws {
        let disk = try SmallDisk(megabytes: 4)
        defer { disk.unmount() }
        let errors = temporaryDirectory("lht-disk-full").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", dataDirectory: disk.url.appendingPathComponent("data"),
                                        arguments: ["--metrics", "127.0.0.1:0"], errorLog: errors)
        let client = try WireClient(logger.api, context: try Context())
        var acked = 0
        for _ in 0..<5 { _ = try client.ok("session.log", session(acked)); acked += 1 }

        try disk.fill()
        // The log file's zeroed tail takes records until it runs out; then the disk is full.
        var failure: JSONValue?
        while acked < 20_000, failure == nil {
            let reply = try client.call("session.log", session(acked))
            if reply["ok"]?.boolValue == true { acked += 1 } else { failure = reply["error"] }
        }
        #expect(failure?["code"]?.stringValue == "unavailable", "\(String(describing: failure))")
        #expect(failure?["message"]?.stringValue?.contains("disk is full") == true, "\(String(describing: failure))")
        #expect(failure?["message"]?.stringValue?.contains(disk.url.path) == true, "names the file on the disk")
        for index in 0..<20 { #expect(try client.failure("session.log", session(acked + 1 + index)).code == "unavailable") }

        let scrape = try Tools.get("http://\(logger.endpoints["metrics"]!)/metrics")
        let counted = scrape.split(separator: "\n").first { $0.hasPrefix("lht_storage_errors_total{reason=\"disk_full\"}") }
        #expect(counted.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0 >= 21, "\(String(describing: counted))")
        let logged = ((try? String(contentsOf: errors, encoding: .utf8)) ?? "").components(separatedBy: "the store is unavailable").count - 1
        #expect(logged == 1, "logged once a minute at most")

        // Space back: the logger goes on by itself, and holds every session it acknowledged.
        disk.free()
        try waitUntil(timeout: 10, interval: 0.05, "a session logged once space is back") {
            try client.call("session.log", session(acked))["ok"]?.boolValue == true
        }
        acked += 1
        try waitUntil(timeout: 10, interval: 0.1, "every acknowledged session listed") { try listed(client) == acked }
        logger.kill()
        _ = logger.stop()
        try logger.restart()
        #expect(try listed(try WireClient(logger.api, context: try Context())) == acked, "after kill -9 too")
        #expect(logger.stop() == 0)
    }

    /// The planner's SQLite files on the full disk: SQLITE_FULL is `unavailable` too, and it goes on
    /// once space is back, with every reminder it acknowledged.
    @Test(.timeLimit(.minutes(2))) func thePlannerAnswersUnavailableOnAFullDiskAndGoesOnOnceSpaceIsBack() throws {
        let disk = try SmallDisk(megabytes: 8)
        defer { disk.unmount() }
        let context = try Context()
        let logger = try ServiceProcess("session-logger")
        let planner = try ServiceProcess("reminder-planner", dataDirectory: disk.url.appendingPathComponent("data"), arguments: [
            "--session-logger-api", logger.api, "--session-logger-events", logger.events, "--clock", "manual:2026-11-16T08:00:00Z",
        ])
        let client = try WireClient(planner.api, context: context)
        func put(_ index: Int) throws -> JSONValue {
            let user = "user\(index / 20)"
            if index % 20 == 0 {
                let reply = try client.call("user.put", ["userId": user, "timeZone": "UTC", "locale": "en"])
                guard reply["ok"]?.boolValue == true else { return reply }
            }
            return try client.call("reminder.put", ["userId": user, "activity": "workout", "time": String(format: "%02d:%02d", index % 24, 10 + index % 50)])
        }
        var acked = 0
        try disk.fill()
        var failure: JSONValue?
        while acked < 50_000, failure == nil {
            let reply = try put(acked)
            if reply["ok"]?.boolValue == true { acked += 1 } else { failure = reply["error"] }
        }
        #expect(failure?["code"]?.stringValue == "unavailable", "\(String(describing: failure))")
        #expect(failure?["message"]?.stringValue?.contains("disk") == true, "\(String(describing: failure))")

        disk.free()
        try waitUntil(timeout: 10, interval: 0.05, "a reminder put once space is back") { try put(acked)["ok"]?.boolValue == true }
        acked += 1
        let listed = try (0...(acked - 1) / 20).reduce(0) { total, user in
            total + (try client.ok("reminder.list", ["userId": "user\(user)"])["reminders"]?.arrayValue.count ?? 0)
        }
        #expect(listed == acked)
        #expect(planner.stop() == 0)
    }
}

/// A tmpfs of its own, mounted on a new directory, that a test can fill to the last byte and free.
final class SmallDisk {
    let url: URL
    private var filler: URL { url.appendingPathComponent("filler") }

    /// Whether this process may mount one (as root, as CI runs the tests).
    static let mountable: Bool = {
        guard let disk = try? SmallDisk(megabytes: 1) else { return false }
        disk.unmount()
        return true
    }()

    init(megabytes: Int) throws {
        url = temporaryDirectory("lht-small-disk")
        let run = try CapturedProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", url.path]).finish(timeout: 10)
        guard run.status == 0 else { throw HarnessError("mount -t tmpfs: \(run.stderr)") }
    }

    /// Writes a file until the disk refuses a single byte more.
    func fill() throws {
        let descriptor = open(filler.path, O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw HarnessError("\(filler.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let block = [UInt8](repeating: 0xA5, count: 64 << 10)
        for size in [block.count, 4096, 1] {
            while write(descriptor, block, size) == size {}
        }
        guard errno == ENOSPC else { throw HarnessError("filling \(url.path): \(String(cString: strerror(errno)))") }
    }

    func free() { unlink(filler.path) }

    func unmount() { _ = try? CapturedProcess("/bin/umount", ["-l", url.path]).finish(timeout: 10) }
}
