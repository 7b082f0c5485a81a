import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Testing
import ZeroMQ

/// Helpers for the system tests that run with keys.
extension LHTSystem {
    var keyDirectory: KeyDirectory { KeyDirectory(keys!.path) }

    /// The service's process; nil when this system did not start it.
    func process(_ service: ServiceName) -> ServiceProcess? {
        switch service {
        case .sessionLogger: logger
        case .reminderPlanner: services[.planner]
        case .notifier: services[.notifier]
        case .noalcStreak: services[.streak]
        }
    }

    func credentialsAsAdmin(_ service: ServiceName) throws -> CurveCredentials {
        try adminCredentials(keyDirectory, service)
    }

    func adminClient(_ service: ServiceName) throws -> ServiceClient {
        ServiceClient(context: context, endpoint: process(service)!.api, credentials: try credentialsAsAdmin(service))
    }

    /// Each running service's newest event seq, as the admin's `health` tells it.
    func lastSeqs() throws -> [String: Int64] {
        var seqs: [String: Int64] = [:]
        for service in ServiceName.allCases where process(service) != nil {
            seqs[service.rawValue] = try adminClient(service).call(Ops.health, NoFields(), timeoutMilliseconds: 5000).lastSeq
        }
        return seqs
    }

    /// Whether every running service has applied all that its upstreams published, and nothing
    /// was published meanwhile: what one event set off has run its course.
    func settled() throws -> Bool {
        let seqs = try lastSeqs()
        for service in ServiceName.allCases where process(service) != nil {
            let health = try adminClient(service).call(Ops.health, NoFields(), timeoutMilliseconds: 5000)
            if health.upstreams.contains(where: { $0.appliedSeq < seqs[$0.name] ?? 0 }) { return false }
        }
        return try lastSeqs() == seqs
    }
}

/// One user's clients of every service of a system, with that user's certificate.
struct ClientsOf {
    let certificate: Certificate
    let system: LHTSystem
    let logger: ServiceClient, planner: ServiceClient, notifier: ServiceClient, streak: ServiceClient

    init(_ system: LHTSystem, _ secret: URL) throws {
        self.system = system
        certificate = try Certificate.loadSecret(secret.path)
        let context = system.context
        let keys = system.keyDirectory
        let certificate = certificate
        func client(_ service: ServiceName) throws -> ServiceClient {
            let endpoint = system.process(service)?.api ?? "tcp://127.0.0.1:1"
            return ServiceClient(context: context, endpoint: endpoint, credentials: CurveCredentials(
                publicKey: certificate.publicKey, secretKey: certificate.secretKey!, serverKey: try keys.servicePublicKey(service.rawValue)))
        }
        logger = try client(.sessionLogger)
        planner = try client(.reminderPlanner)
        notifier = try client(.notifier)
        streak = try client(.noalcStreak)
    }

    func credentials(_ service: ServiceName) throws -> CurveCredentials {
        CurveCredentials(publicKey: certificate.publicKey, secretKey: certificate.secretKey!,
                         serverKey: try system.keyDirectory.servicePublicKey(service.rawValue))
    }

    /// The service's refusal of `request`, nil if it was accepted. No answer at all is `unavailable`.
    func refusal<Input, Output>(_ client: ServiceClient, _ op: Op<Input, Output>, _ request: Input) -> WireError? {
        do {
            _ = try client.call(op, request, timeoutMilliseconds: 5000)
            return nil
        } catch {
            return error
        }
    }
}

/// Whether a `health` request on a raw DEALER, set up by `configure` (CURVE options or none), is answered within 1.5 s.
func rawHealth(_ endpoint: String, configure: (Socket) throws -> Void) throws -> Bool {
    let context = try Context()
    defer { context.shutdown() }
    let socket = try Socket(context, .dealer)
    defer { socket.close() }
    try configure(socket)
    try socket.connect(endpoint)
    _ = try socket.send(multipart: [Data(), Data(#"{"v":1,"op":"health","data":{}}"#.utf8)])
    return try Poller.readable([socket], timeoutMilliseconds: 1500)[0]
}

func instant(_ text: String) -> Instant { Instant(rfc3339: text)! }

func mode(_ url: URL) -> mode_t {
    var info = stat()
    guard stat(url.path, &info) == 0 else { return 0 }
    return info.st_mode & 0o777
}
