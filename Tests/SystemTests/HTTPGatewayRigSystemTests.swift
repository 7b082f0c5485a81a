import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing

/// The services of an `LHTSystem` with the real `http-gateway` in front of them, and curl as the
/// HTTP client (HTTP/1.1, TLS, SSE streamed with -N): what a person's script or phone would use.
final class GatewayRig {
    let system: LHTSystem
    let extra: [String]
    private(set) var gateway: CapturedProcess!
    /// host:port from the gateway's ready line.
    private(set) var address = ""
    private(set) var scheme = "http"
    let files = temporaryDirectory("lht-gateway-rig")

    init(services: [ServiceKind], keys: Bool, gatewayArguments extra: [String] = []) throws {
        system = try LHTSystem(services: services, keys: keys)
        self.extra = extra
        try startGateway(port: 0)
    }

    /// The gateway's upstream flags: every service of the system; one not started points where nothing listens.
    var upstreamFlags: [String] {
        var flags = ["--session-logger-api", system.logger.api, "--session-logger-events", system.logger.events]
        for kind in ServiceKind.allCases {
            let process = system.services[kind]
            let stem = kind.service.flagStem
            flags += ["--\(stem)-api", process?.api ?? "tcp://127.0.0.1:1", "--\(stem)-events", process?.events ?? "tcp://127.0.0.1:1"]
        }
        return flags + (system.keys.map { ["--keys", $0.path] } ?? [])
    }

    /// Starts the gateway (again, e.g. after a kill) on `port` (0: any) and waits for its ready line.
    func startGateway(port: Int) throws {
        let process = try userProcess(BuildProducts.executable("http-gateway"),
                                      ["--http", "127.0.0.1:\(port)", "--metrics", "off", "--log-level", "warning"] + upstreamFlags + extra)
        try process.waitForOutput("ready http-gateway", timeout: 30)
        gateway = process
        guard let line = process.output.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }),
              let part = line.split(separator: " ").first(where: { $0.hasPrefix("http=") || $0.hasPrefix("https=") }) else {
            throw HarnessError("no address in the gateway's ready line: \(process.output)")
        }
        scheme = part.hasPrefix("https=") ? "https" : "http"
        address = String(part.split(separator: "=", maxSplits: 1)[1])
    }

    var port: Int { Int(address.split(separator: ":").last!)! }

    /// The gateway's `/metrics` scrape (the rig started with `--metrics 127.0.0.1:0`).
    func scrape() throws -> String {
        guard let line = gateway.output.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }),
              let part = line.split(separator: " ").first(where: { $0.hasPrefix("metrics=") }) else {
            throw HarnessError("no metrics address in the gateway's ready line: \(gateway.output)")
        }
        return try Tools.get("http://\(part.dropFirst("metrics=".count))/metrics")
    }

    /// The value of one series of a scrape: `name` with every label of `labels`, 0 when there is none yet.
    static func value(_ scrape: String, _ name: String, _ labels: [String: String] = [:]) -> Double {
        for line in scrape.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            guard labels.allSatisfy({ line.contains("\($0.key)=\"\($0.value)\"") }) else { continue }
            return line.split(separator: " ").last.flatMap { Double($0) } ?? 0
        }
        return 0
    }

    func url(_ path: String) -> String { "\(scheme)://\(address)\(path)" }

    /// `lht tokens add` into the system's key directory; the token it printed.
    func addToken(_ user: String, label: String? = nil, curlArguments: [String] = []) throws -> String {
        guard let keys = system.keys else { throw HarnessError("no keys, no tokens") }
        let run = try runLHT(["tokens", "add", user, "--keys", keys.path] + (label.map { ["--label", $0] } ?? []))
        guard run.status == 0, let token = run.stdout.split(separator: "\n").first.map(String.init), token.hasPrefix("lht_") else {
            throw HarnessError("lht tokens add: \(run.status) \(run.stdout) \(run.stderr)")
        }
        // The gateway re-reads tokens/ on its own (within 5 s): wait until it takes this one.
        try waitUntil(timeout: 6, interval: 0.1, "the gateway taking the new token") {
            try request("/v1/user.get", body: Data("{}".utf8), token: token, curlArguments: curlArguments).status != 401
        }
        return token
    }

    struct HTTPResponse {
        let status: Int
        let headers: String
        let body: String

        func header(_ name: String) -> String? {
            headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
                .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
        }

        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]) ?? [:] }
        var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        var data: [String: Any] { json["data"] as? [String: Any] ?? [:] }
    }

    /// One request with curl: `POST` when there is a body, else `GET`.
    func request(_ path: String, body: Data? = nil, token: String? = nil, contentType: String? = "application/json",
                 headers: [String] = [], curlArguments: [String] = []) throws -> HTTPResponse {
        let id = UUID().uuidString
        let bodyFile = files.appendingPathComponent("\(id).body"), headerFile = files.appendingPathComponent("\(id).headers")
        var arguments = ["-sS", "-o", bodyFile.path, "-D", headerFile.path, "-w", "%{http_code}", "--max-time", "20"] + curlArguments
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        for header in headers { arguments += ["-H", header] }
        if let body {
            let requestFile = files.appendingPathComponent("\(id).request")
            try body.write(to: requestFile)
            arguments += ["-X", "POST", "--data-binary", "@\(requestFile.path)"]
            if let contentType { arguments += ["-H", "Content-Type: \(contentType)"] }
        }
        let run = try runProcess(URL(fileURLWithPath: "/usr/bin/curl"), arguments + [url(path)])
        guard let status = Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), status > 0 else {
            throw HarnessError("curl \(path): \(run.status) \(run.stdout) \(run.stderr)")
        }
        return HTTPResponse(status: status, headers: (try? String(contentsOf: headerFile, encoding: .utf8)) ?? "",
                            body: (try? String(contentsOf: bodyFile, encoding: .utf8)) ?? "")
    }

    func post(_ op: String, _ json: String, token: String? = nil) throws -> HTTPResponse {
        try request("/v1/\(op)", body: Data(json.utf8), token: token)
    }

    /// An event stream read by `curl -N` as it arrives (stop it with `terminate`).
    func stream(_ query: String, token: String?, headers: [String] = []) throws -> CapturedProcess {
        var arguments = ["-sS", "-N", "--max-time", "60"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        for header in headers { arguments += ["-H", header] }
        return try userProcess(URL(fileURLWithPath: "/usr/bin/curl"), arguments + [url("/v1/events\(query)")])
    }
}

extension CapturedProcess {
    /// The SSE messages printed so far: each message's fields by name (`event`, `id`, `data`).
    var serverSentEvents: [[String: String]] {
        output.components(separatedBy: "\n\n").compactMap { block in
            var fields: [String: String] = [:]
            for line in block.split(separator: "\n") where !line.hasPrefix(":") {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
            return fields["event"] == nil ? nil : fields
        }
    }

    /// The `id:` the stream sent last (an event's, or the one after its replay).
    var lastEventID: String? {
        output.split(separator: "\n").last { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
    }

    /// `TestSupport.waitUntil`, naming what the stream had by the deadline.
    func waitUntil(_ what: String, timeout: TimeInterval = 15, _ condition: () -> Bool) throws {
        try TestSupport.waitUntil(timeout: timeout, interval: 0.05, "\(what) (the stream had: \(output.suffix(2000)) \(errors))", condition)
    }
}
