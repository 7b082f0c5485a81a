import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import TestSupport
import ZeroMQ

/// `bench curve [--clients 8] [--per-client 5000] [--rounds 3] [--quick]`
///
/// Acknowledged, durable `session.log` throughput with CurveZMQ on (a keyed session logger, every
/// client a user with its own certificate) beside the same clients against a plaintext one, in
/// alternating rounds of one run. Target: on ≥ 0.8 × off.
enum CurveBenchmark {
    static func run(_ arguments: [String]) throws {
        let quick = arguments.contains("--quick")
        let clients = Options.int(arguments, "--clients", 8)
        let perClient = Options.int(arguments, "--per-client", quick ? 1000 : 5000)
        let rounds = Options.int(arguments, "--rounds", quick ? 1 : 3)
        let keys = try KeyDirectory.create(at: temporaryDirectory("lht-bench-keys").path)
        let serverKey = try keys.servicePublicKey(ServiceName.sessionLogger.rawValue)
        let users = try (0..<clients).map { client in
            let user = try keys.addUser(UserID("bench\(client)")!, outDirectory: temporaryDirectory("lht-bench-user").path)
            return CurveCredentials(publicKey: user.publicKey, secretKey: user.secretKey!, serverKey: serverKey)
        }
        let context = try Context()
        let plain = try InProcessService.sessionLogger(context: context)
        defer { plain.stop() }
        // A keyed service has a context of its own: one ZAP handler per context.
        let secured = try InProcessService.sessionLogger(context: Context(), extra: ["--keys", keys.path])
        defer { secured.stop() }

        var on: [Double] = [], off: [Double] = []
        for round in 0..<rounds {
            // Every request is its own insert, and each client logs for the user its key names.
            func frames(salt: Int) -> @Sendable (Int) -> [Data] {
                { client in (0..<perClient).map { SessionLogBenchmark.sessionLog(n: $0, client: 1000 * salt + client, user: "bench\(client)") } }
            }
            off.append(LoadClients.throughput(endpoint: plain.api, context: context, clients: clients, window: 64,
                                              frames: frames(salt: 2 * round + 1)))
            on.append(LoadClients.throughput(endpoint: secured.api, context: context, clients: clients, window: 64,
                                             credentials: { users[$0] }, frames: frames(salt: 2 * round + 2)))
        }
        print("session.log throughput, \(clients) pipelined DEALER clients × \(perClient) requests, \(rounds) alternating rounds")
        for (index, (plainRate, curveRate)) in zip(off, on).enumerated() {
            print(String(format: "  round %d   plaintext %9.0f acks/s   CURVE %9.0f acks/s   ratio %.3f",
                         index + 1, plainRate, curveRate, curveRate / plainRate))
        }
        let ratio = on.reduce(0, +) / off.reduce(0, +)
        Target.report(String(format: "session.log over CURVE %.0f acks/s (mean of the rounds)", on.reduce(0, +) / Double(on.count)),
                      ratio: String(format: "%.3f × plaintext (all rounds)", ratio), target: "≥ 0.8 × plaintext", met: ratio >= 0.8)
    }
}
