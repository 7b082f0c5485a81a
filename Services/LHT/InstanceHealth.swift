import Foundation
import LHTClient
import LHTSchema
import Synchronization
import ZeroMQ

/// One instance's answer to `health`, as `lht health` and `lht status` show it (PROTOCOL "Cluster":
/// they list every instance named in the lists).
struct InstanceHealth: Sendable {
    let service: ServiceName
    /// The instance's api endpoint, as its list names it.
    let endpoint: String
    let result: Result<Answer<HealthReply>, Failure>

    var answer: Answer<HealthReply>? { try? result.get() }

    var failure: Failure? {
        guard case .failure(let failure) = result else { return nil }
        return failure
    }

    /// `owns` as the instance sent it, read from the reply's own bytes: `leaseAgeSeconds` shows
    /// whether or not the schema's `Ownership` has that field.
    var owns: Owns? {
        guard let answer else { return nil }
        return (try? JSONDecoder().decode(OwnsMember.self, from: answer.raw))?.owns
    }

    private struct OwnsMember: Decodable { let owns: Owns? }
}

/// `health.owns`: the partitions this instance does the time-driven work for, of all, and how long
/// ago it last renewed its lease (nil from an instance that does not say).
struct Owns: Decodable, Sendable {
    let partitions: Int
    let of: Int
    let leaseAgeSeconds: Double?

    /// "32/64".
    var share: String { "\(partitions)/\(of)" }

    /// "0.4 s", "-" when not told.
    var leaseAge: String { leaseAgeSeconds.map { "\((($0 * 10).rounded() / 10).formatted()) s" } ?? "-" }
}

/// Every instance of one service, in the order its list names them.
struct ServiceHealth: Sendable {
    let service: ServiceName
    let instances: [InstanceHealth]

    var answered: [InstanceHealth] { instances.filter { $0.answer != nil } }

    /// The partitions the answering instances own, added up, and of how many; nil when none says.
    var owned: (partitions: Int, of: Int)? {
        let shares = instances.compactMap(\.owns)
        guard let of = shares.first?.of else { return nil }
        return (shares.reduce(0) { $0 + $1.partitions }, of)
    }

    /// "reminder-planner: 2 of 2 instances up, owning 64 of 64 partitions", for a service with several.
    var summary: String {
        var line = "\(service.rawValue): \(answered.count) of \(instances.count) instances up"
        if let owned {
            line += ", owning \(owned.partitions) of \(owned.of) partitions"
            if owned.partitions < owned.of { line += " (\(owned.of - owned.partitions) unowned)" }
        }
        return line
    }
}

/// Asks every instance that the lists name for each of `services` for `health`, all at once, each on
/// a thread of its own with its own client: instances that are down cost --timeout once, not once each.
func askHealth(_ services: [ServiceName], connection: Connection) throws(Failure) -> [ServiceHealth] {
    let keys = try connection.security.load()
    var asks: [(service: ServiceName, endpoint: String, credentials: CurveCredentials?)] = []
    for service in services {
        let credentials = try keys?.credentials(for: service)
        for endpoint in try connection.apiEndpoints(service) { asks.append((service, endpoint, credentials)) }
    }
    let answers = Answers()
    let (milliseconds, seconds) = (connection.milliseconds, connection.seconds)
    let group = DispatchGroup()
    for (index, ask) in asks.enumerated() {
        group.enter()
        Thread {
            let result = health(of: ask.service, at: ask.endpoint, credentials: ask.credentials, milliseconds: milliseconds, seconds: seconds)
            answers.byIndex.withLock { $0[index] = InstanceHealth(service: ask.service, endpoint: ask.endpoint, result: result) }
            group.leave()
        }.start()
    }
    group.wait()
    let all = answers.byIndex.withLock { byIndex in asks.indices.map { byIndex[$0]! } }
    return services.map { service in ServiceHealth(service: service, instances: all.filter { $0.service == service }) }
}

private final class Answers: Sendable {
    let byIndex = Mutex<[Int: InstanceHealth]>([:])
}

/// `health` from the one instance at `endpoint`, on the calling thread.
private func health(of service: ServiceName, at endpoint: String, credentials: CurveCredentials?, milliseconds: Int,
                    seconds: Double) -> Result<Answer<HealthReply>, Failure> {
    let context: Context
    do {
        context = try Context()
    } catch {
        return .failure(.local("cannot open a ZeroMQ context: \(error)"))
    }
    let client = ServiceClient(context: context, endpoint: endpoint, credentials: credentials)
    do {
        let (value, data) = try client.callWithData(Ops.health, NoFields(), timeoutMilliseconds: milliseconds)
        return .success(Answer(value: value, raw: data))
    } catch {
        return .failure(Failure(error, service: service, op: Ops.health.name, client: client, seconds: seconds))
    }
}
