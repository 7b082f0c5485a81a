import Foundation
import Glibc
import PostgresStorage
import Synchronization
import Testing
import ZeroMQ

/// PostgreSQL's own failover, as an operator runs it: a streaming standby made with
/// `pg_basebackup -R` (standby.signal, primary_conninfo), the primary SIGKILLed, the standby
/// promoted (`pg_ctl promote`). The service, given both hosts in one URL with
/// `target_session_attrs=read-write`, finds the new primary by itself (PROTOCOL "The database's
/// own failover").
@Suite(.serialized, SystemTestBackend.onceOnly) struct DatabaseFailoverSystemTests {
    /// Synchronous replication: every acknowledged session is on the promoted standby, under the same `logId`.
    @Test func aPromotedSynchronousStandbyHasEverythingAcknowledged() throws {
        let primary = try TestPostgres()
        defer { primary.stop() }
        let standby = try Standby(of: primary)
        defer { standby.stop() }
        let admin = try primary.connect()
        try admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        try admin.execute("SELECT pg_reload_conf()")
        try waitUntil(timeout: 10, interval: 0.1, "the standby replicating synchronously") {
            try admin.execute("SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'").count == 1
        }
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off", "--database", standby.bothHostsURL(primary)])
        let context = try Context()
        let client = try WireClient(logger.api, context: context)
        let logId = try client.ok("health")["logId"]?.stringValue

        let acknowledged = Mutex<[String]>([]), stop = Atomic<Bool>(false), done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            guard let writer = try? WireClient(logger.api, context: context) else { return }
            var n = 0
            while !stop.load(ordering: .relaxed) {
                n += 1
                let session = ClusterSystemTests.session("sue", minutesAgo: 60 + n % 600)
                if (try? writer.ok("session.log", session)) != nil { acknowledged.withLock { $0.append(session["id"] as! String) } }
                Thread.sleep(forTimeInterval: 0.005)  // a steady writer, not a flood
            }
        }.start()
        try waitUntil(timeout: 10, interval: 0.05, "sessions acknowledged") { acknowledged.withLock { $0.count } >= 20 }
        try primary.killPostmaster()
        let before = acknowledged.withLock { $0.count }
        try standby.promote()
        try waitUntil(timeout: 30, interval: 0.1, "sessions acknowledged by the promoted standby") { acknowledged.withLock { $0.count } >= before + 20 }
        stop.store(true, ordering: .relaxed)
        done.wait()

        let logged = try client.allEvents().compactMap { $0["data"]?["id"]?.stringValue }
        let acked = acknowledged.withLock { $0 }
        #expect(Set(acked).isSubset(of: Set(logged)), "acknowledged but lost: \(Set(acked).subtracting(logged).count) of \(acked.count)")
        #expect(Set(logged).count == logged.count)
        #expect(try client.ok("health")["logId"]?.stringValue == logId, "nothing was lost: the log is the same")
    }

    /// Asynchronous replication with a tail the standby never got: the service notices it at
    /// reconnect, logs it as an error, and its log takes a new `logId` before any new event.
    @Test func aPromotionThatLostTheLogsTailGivesTheLogANewIdentity() throws {
        let primary = try TestPostgres()
        defer { primary.stop() }
        let standby = try Standby(of: primary)
        defer { standby.stop() }
        let errors = temporaryDirectory("lht-failover").appendingPathComponent("stderr")
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off", "--database", standby.bothHostsURL(primary)],
                                        errorLog: errors)
        let client = try WireClient(logger.api, context: try Context())
        for minutes in [50, 40, 30] { _ = try client.ok("session.log", ClusterSystemTests.session("sue", minutesAgo: minutes)) }
        let logId = try #require(try client.ok("health")["logId"]?.stringValue)
        try standby.waitUntilReplayed(primary)

        // The standby down, three more sessions committed on the primary alone, then the primary dies.
        try standby.halt()
        for minutes in [20, 10, 5] { _ = try client.ok("session.log", ClusterSystemTests.session("sue", minutesAgo: minutes)) }
        try primary.killPostmaster()
        try standby.start()
        try standby.promote()

        var seq: Int64?
        try waitUntil(timeout: 30, interval: 0.1, "the logger storing on the promoted standby") {
            seq = (try? client.ok("session.log", ClusterSystemTests.session("sue", minutesAgo: 1)))?["seq"]?.intValue
            return seq != nil
        }
        #expect(seq == 4, "the new event follows the promoted log's head")
        let page = try client.ok("events.since", ["after": 0, "limit": 100])
        let renewed = page["logId"]?.stringValue
        #expect(renewed != nil && renewed != logId, "the log kept its identity \(logId) after losing seqs 4-6")
        #expect(try client.ok("health")["logId"]?.stringValue == renewed)
        #expect(page["events"]?.arrayValue.compactMap { $0["seq"]?.intValue } == [1, 2, 3, 4])
        let log = try String(contentsOf: errors, encoding: .utf8)
        #expect(log.contains("lost committed log entries") && log.contains("another timeline") && log.contains("1 → 2"), "\(log.suffix(2000))")
    }
}

/// A streaming standby of a `TestPostgres`, in a directory of its own, on a port of its own.
private final class Standby {
    let port: Int
    private let directory = ScratchDirectory("lht-standby")
    private let binaries: String
    private var data: String { directory.url.appendingPathComponent("data").path }

    init(of primary: TestPostgres) throws {
        binaries = try TestPostgres.binaries()
        let admin = try primary.connect()
        let hba = try #require(try admin.execute("SHOW hba_file").first?.text(0))
        let rules = try FileHandle(forWritingTo: URL(fileURLWithPath: hba))
        try rules.seekToEnd()
        try rules.write(contentsOf: Data("host replication all 127.0.0.1/32 trust\n".utf8))
        try rules.close()
        try admin.execute("SELECT pg_reload_conf()")
        if getuid() == 0, let user = getpwnam("postgres") { chown(directory.url.path, user.pointee.pw_uid, user.pointee.pw_gid) }
        try Self.run(binaries + "/pg_basebackup", ["-D", directory.url.appendingPathComponent("data").path, "-h", "127.0.0.1", "-p", "\(primary.port)", "-U", "postgres",
                                                   "-R", "-X", "stream", "-c", "fast"])
        port = try freeLoopbackPort()
        let data = self.data
        let settings = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
        try settings.seekToEnd()
        try settings.write(contentsOf: Data("\nport = \(port)\nunix_socket_directories = '\(directory.url.path)'\n".utf8))
        try settings.close()
        try start()
    }

    /// The primary's URL naming both servers, for the read-write one.
    func bothHostsURL(_ primary: TestPostgres) -> String {
        "postgresql://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(port)/postgres?target_session_attrs=read-write&connect_timeout=2"
    }

    func start() throws {
        try Self.run(binaries + "/pg_ctl", ["start", "-D", data, "-w", "-t", "30", "-l", directory.url.appendingPathComponent("server.log").path])
    }

    func halt() throws { try Self.run(binaries + "/pg_ctl", ["stop", "-D", data, "-m", "fast", "-w"]) }

    func promote() throws { try Self.run(binaries + "/pg_ctl", ["promote", "-D", data, "-w", "-t", "30"]) }

    /// Until the standby has replayed everything the primary has written so far.
    func waitUntilReplayed(_ primary: TestPostgres) throws {
        let written = try #require(try primary.connect().execute("SELECT pg_current_wal_lsn()::text").first?.text(0))
        let standby = try PostgresConnection(url: "postgresql://postgres@127.0.0.1:\(port)/postgres")
        try waitUntil(timeout: 10, interval: 0.05, "the standby replaying through \(written)") {
            try standby.execute("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", [.text(written)]).first?.text(0) == "t"
        }
    }

    func stop() { try? Self.run(binaries + "/pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"]) }

    deinit { stop() }

    private static func run(_ program: String, _ arguments: [String]) throws {
        let process = getuid() == 0
            ? try CapturedProcess("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
            : try CapturedProcess(program, arguments)
        let run = try process.finish(timeout: 60)
        guard run.status == 0 else { throw HarnessError("\(program) exited with \(run.status): \(run.stdout) \(run.stderr)") }
    }
}

extension TestPostgres {
    /// SIGKILL to the server's postmaster: a crash, its backends ending as they notice.
    func killPostmaster() throws {
        let directory = try #require(try connect().execute("SHOW data_directory").first?.text(0))
        let pidLine = try String(contentsOfFile: directory + "/postmaster.pid", encoding: .utf8).split(separator: "\n").first
        let pid = try #require(pidLine.flatMap { pid_t($0) })
        kill(pid, SIGKILL)
    }
}
