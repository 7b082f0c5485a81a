import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// Sessions that never overlap: one a minute, going back from an hour ago.
enum Sessions {
    static func session(user: String, index: Int) -> [String: Any] {
        let end = Instant.now().adding(seconds: Int64(-3600 - index * 60))
        return ["userId": user, "activity": "mindfulness", "start": end.adding(seconds: -30).description, "end": end.description]
    }
}

/// A Unix datagram socket bound at `path`, as systemd's notify socket is.
final class DatagramListener {
    let descriptor: Int32

    init(path: String) throws {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw HarnessError("cannot bind \(path): errno \(errno)") }
    }

    func receive(timeout: TimeInterval) -> String? {
        var poll = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    deinit { close(descriptor) }
}

/// Programs the tests run (installed by `deploy/install-prerequisites --ops` when missing).
enum Tools {
    static func path(_ tool: String) throws -> URL {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin"] {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent(tool)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw HarnessError("\(tool) is not installed")
    }

    private static let installing = NSLock()

    /// Installs the ops prerequisites once when `tool` is missing, as the project installs what it needs.
    static func require(_ tool: String) throws {
        installing.lock()
        defer { installing.unlock() }
        if (try? path(tool)) != nil { return }
        let script = repositoryRoot.appendingPathComponent("deploy/install-prerequisites")
        let result = try run("/bin/bash", [script.path, "--ops"])
        guard (try? path(tool)) != nil else { throw HarnessError("\(tool) missing and install-prerequisites --ops failed: \(result.output)") }
    }

    static func run(_ tool: String, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil) throws
        -> (status: Int32, output: String) {
        let directory = temporaryDirectory("lht-tool")
        let inputFile = directory.appendingPathComponent("input"), outputFile = directory.appendingPathComponent("output")
        if let input { try input.write(to: inputFile) }
        let process = try ChildProcess(tool.hasPrefix("/") ? tool : try path(tool).path, arguments, environment: environment,
                                       stdin: input == nil ? .null : .file(inputFile.path),
                                       stdout: .file(outputFile.path), stderr: .file(outputFile.path))
        return (process.wait().status, (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "")
    }

    /// Runs a service that is expected to exit by itself (a start-up error); one still running after 10 s is
    /// killed and an error.
    static func runService(_ name: String, _ arguments: [String], environment extra: [String: String] = [:]) throws
        -> (status: Int32, stderr: String) {
        let data = temporaryDirectory("lht-ops").appendingPathComponent("data")
        let run = try CapturedProcess(BuildProducts.executable(name).path, [
            "--data-dir", data.path, "--api", "tcp://127.0.0.1:*", "--events", "tcp://127.0.0.1:*",
        ] + (name == "session-logger" ? ["--intake", "tcp://127.0.0.1:*"] : []) + arguments,
            environment: ProcessInfo.processInfo.environment.merging(extra) { _, given in given }).finish(timeout: 10)
        return (run.status, run.stderr)
    }

    /// GET over plain HTTP/1.1 on loopback (URLSession needs FoundationNetworking; a socket is enough).
    static func get(_ url: String) throws -> String {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port else {
            throw HarnessError("bad url \(url)")
        }
        var target = components.percentEncodedPath
        if let query = components.percentEncodedQuery { target += "?" + query }
        return String(decoding: try httpGet(host: host, port: port, target: target), as: UTF8.self)
    }

    /// A Prometheus instant query through its HTTP API.
    static func query(port: Int, _ expression: String) throws -> JSONValue {
        var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return try JSONDecoder().decode(JSONValue.self, from: Data(get(components.string!).utf8))
    }

    /// A TCP listener on loopback (port 0: any free one).
    final class Listener {
        let descriptor: Int32
        let port: Int

        init(port requested: Int = 0) throws {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var yes: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(requested).bigEndian)
            inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0, listen(descriptor, 8) == 0 else {
                close(descriptor)
                throw HarnessError("cannot listen on 127.0.0.1:\(requested)")
            }
            var actual = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &actual) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            self.descriptor = descriptor
            port = Int(UInt16(bigEndian: actual.sin_port))
        }

        deinit { close(descriptor) }
    }

    static func freePort() throws -> Int { try Listener().port }
}
