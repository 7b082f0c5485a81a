import Foundation
import Glibc
import PostgresStorage
import Synchronization

/// A PostgreSQL server of one test's own: Debian's binaries (`/usr/lib/postgresql/<version>/bin`),
/// a fresh cluster in a temporary directory, listening on 127.0.0.1 on a port the OS picked and on
/// a unix socket in that directory, fsync on. Tests run as root (CI does) and PostgreSQL refuses to
/// run as root, so initdb and pg_ctl run as the `postgres` user (as the user itself otherwise).
/// `stop()` (or deinit) stops it at once and removes the directory.
public final class TestPostgres: Sendable {
    /// The superuser `postgres` over TCP, trusted without a password.
    public let url: String
    public let port: Int
    private let binaries: String
    private let directory: ScratchDirectory
    private var data: String { directory.url.appendingPathComponent("data").path }
    private let running = Mutex(false)
    /// Stops the server if this process dies without `stop()` (a trap in a test): else the server
    /// would outlive it, port, memory and directory. Killed by `stop()`.
    private let watchdog = Mutex<ChildProcess?>(nil)

    /// The servers running now (data directory → binaries), stopped at exit before the temporary
    /// directories are removed: atexit handlers run newest first, and this one is registered after
    /// `temporaryDirectory`'s. A server a test kept to the end (the system tests' shared one) would
    /// otherwise outlive the process: its watchdog's `pg_ctl stop` finds the directory gone, and
    /// PostgreSQL stops by itself only once it notices its lock file missing, up to a minute later.
    private static let liveServers = {
        atexit { TestPostgres.stopAllAtExit() }
        return Mutex<[String: String]>([:])
    }()

    private static func stopAllAtExit() {
        for (data, binaries) in liveServers.withLock({ $0 }) { try? run(binaries + "/pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"]) }
    }

    /// A login role that must give its password ("scram-sha-256"), for the wrong-password test.
    public static let passwordRole = (name: "lht_password", password: "right-horse-battery")

    /// `alsoListeningOn`: an address of this machine's besides loopback (a veth's, for a test's
    /// second "host" in a network namespace), trusted for its /24 as loopback is.
    public init(alsoListeningOn extraAddress: String? = nil) throws {
        binaries = try Self.binaries()
        directory = ScratchDirectory("lht-postgres")
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw HarnessError("no postgres user to run PostgreSQL as: run deploy/install-prerequisites --postgres")
            }
            guard chown(directory.url.path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw HarnessError("chown \(directory.url.path) postgres: \(String(cString: strerror(errno)))")
            }
        }
        // --no-sync only skips initdb's final sync of the fresh files; the server below runs with fsync = on.
        try Self.run(binaries + "/initdb", ["-D", directory.url.appendingPathComponent("data").path, "-U", "postgres",
                                            "-E", "UTF8", "--locale=C", "--no-sync"])
        let data = directory.url.appendingPathComponent("data")
        try """
            local all all trust
            host all \(Self.passwordRole.name) 127.0.0.1/32 scram-sha-256
            host all all 127.0.0.1/32 trust
            \(extraAddress.map { "host all all \($0.split(separator: ".").dropLast().joined(separator: ".")).0/24 trust" } ?? "")

            """.write(to: data.appendingPathComponent("pg_hba.conf"), atomically: false, encoding: .utf8)

        // Another process may take the free port before the server binds it: then ask again.
        var attempt = 0
        while true {
            attempt += 1
            let port = try freeLoopbackPort()
            // Later lines win, so a retry appends its port after the last one.
            let settings = """

                listen_addresses = '\(["127.0.0.1", extraAddress].compactMap { $0 }.joined(separator: ","))'
                port = \(port)
                unix_socket_directories = '\(directory.url.path)'
                fsync = on
                synchronous_commit = on
                # A lock held this long is a bug in the code under test: fail instead of hanging.
                lock_timeout = '30s'

                """
            let configuration = try FileHandle(forWritingTo: data.appendingPathComponent("postgresql.conf"))
            try configuration.seekToEnd()
            try configuration.write(contentsOf: Data(settings.utf8))
            try configuration.close()
            do {
                try Self.run(binaries + "/pg_ctl", ["start", "-D", data.path, "-w", "-t", "30",
                                                    "-l", directory.url.appendingPathComponent("server.log").path])
                self.port = port
                break
            } catch {
                let log = (try? String(contentsOf: directory.url.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
                guard attempt < 3, log.contains("Address already in use") else { throw HarnessError("\(error) server log: \(log)") }
            }
        }
        running.withLock { $0 = true }
        let binaries = binaries
        Self.liveServers.withLock { $0[data.path] = binaries }
        let asPostgres = getuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : ""
        // Stops the server once this process is gone, or when told to (SIGTERM: `bench` ending what it started).
        let script = "stop() { \(asPostgres)'\(binaries)/pg_ctl' stop -D '\(data.path)' -m immediate; rm -rf '\(directory.url.path)'; exit 0; }; "
            + "trap stop TERM; while [ -d /proc/\(getpid()) ]; do sleep 1; done; stop"
        // A process group of its own: a ^C at the terminal ends the tests, not the watchdog.
        let shell = try ChildProcess("/bin/sh", ["-c", script], stdout: .null, stderr: .null, ownProcessGroup: true)
        watchdog.withLock { $0 = shell }
        url = "postgresql://postgres@127.0.0.1:\(port)/postgres?connect_timeout=10"
        let connection = try connect()
        guard try connection.execute("SHOW fsync").first?.text(0) == "on" else { throw HarnessError("the test server runs without fsync") }
        try connection.execute("CREATE ROLE \(Self.passwordRole.name) LOGIN PASSWORD '\(Self.passwordRole.password)'")
    }

    /// The URL by another of the server's addresses (`alsoListeningOn`).
    public func url(host: String) -> String { url.replacingOccurrences(of: "@127.0.0.1:", with: "@\(host):") }

    public func connect() throws -> PostgresConnection { try PostgresConnection(url: url) }

    /// An outage: the server stops at once (`-m immediate`, as a crash would), keeping its data
    /// directory and port for `resume()`.
    public func halt() throws {
        try Self.run(binaries + "/pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"])
    }

    /// The server again after `halt()`, on the same port, having recovered from its WAL.
    public func resume() throws {
        try Self.run(binaries + "/pg_ctl", ["start", "-D", data, "-w", "-t", "30",
                                            "-l", directory.url.appendingPathComponent("server.log").path])
    }

    /// `pg_ctl stop -m immediate`: no shutdown checkpoint, the directory goes next anyway.
    public func stop() {
        guard running.withLock({ running in defer { running = false }; return running }) else { return }
        try? Self.run(binaries + "/pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"])
        Self.liveServers.withLock { $0[data] = nil }
        watchdog.withLock { $0?.kill() }
    }

    deinit { stop() }

    /// The newest `/usr/lib/postgresql/<version>/bin` with a server in it. Not `pg_config --bindir`:
    /// on Debian that is the client's directory (/usr/bin), where only wrappers live. Benchmarks
    /// find pgbench there.
    public static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }.sorted()
        for version in versions.reversed() {
            let bin = "\(root)/\(version)/bin"
            if ["initdb", "pg_ctl", "postgres"].allSatisfy({ FileManager.default.isExecutableFile(atPath: "\(bin)/\($0)") }) {
                return bin
            }
        }
        throw HarnessError("no PostgreSQL server in \(root)/<version>/bin (initdb, pg_ctl, postgres): run deploy/install-prerequisites --postgres")
    }

    /// Runs a PostgreSQL program to its end, as `postgres` when we are root.
    private static func run(_ program: String, _ arguments: [String]) throws {
        let process = getuid() == 0
            ? try CapturedProcess("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
            : try CapturedProcess(program, arguments)
        let run = try process.finish(timeout: 60)
        guard run.status == 0 else {
            throw HarnessError("\(program) \(arguments.first ?? "") exited with \(run.status): \(run.stdout) \(run.stderr)")
        }
    }
}
