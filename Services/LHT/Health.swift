import ArgumentParser
import Foundation
import LHTSchema
import LHTClient
import Synchronization
import ZeroMQ

struct Health: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask services whether they are up: version, uptime, newest event seq and counters.",
        discussion: "Without a service, all four are asked at once. Status 3 if any did not answer within --timeout.")

    @Argument(help: "session-logger, planner, notifier or streak (default: all).")
    var service: String?

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func validate() throws {
        if let service, ServiceName(argument: service) == nil {
            throw ValidationError("\"\(service)\" is not a service: session-logger, planner, notifier or streak")
        }
    }

    func run() throws {
        let services = service.flatMap(ServiceName.init(argument:)).map { [$0] } ?? ServiceName.allCases
        // Unusable keys are one line, not one per service asked.
        _ = try connection.security.load()
        let answers = askHealth(services, connection: connection)
        let failures = services.compactMap { service -> Failure? in
            if case .failure(let failure) = answers[service] { return failure }
            return nil
        }
        if output.json {
            if services.count == 1, case .success(let answer) = answers[services[0]] {
                emit(answer.rawText)
            } else {
                let parts = services.map { service -> String in
                    let value = if case .success(let answer) = answers[service] { answer.rawText } else { "null" }
                    return "\(JSONValue.string(service.rawValue).jsonLine):\(value)"
                }
                emit("{" + parts.joined(separator: ",") + "}")
            }
        } else {
            var table = Table("service", "api", "status", "instance", "uptime", "last seq", "counters")
            for service in services {
                switch answers[service] {
                case .success(let answer)?:
                    let health = answer.value
                    let counters = health.counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                    table.add(service.rawValue, connection.api(service), "up \(health.version)", health.instance ?? "-",
                              "\(health.uptimeSeconds) s", String(health.lastSeq), counters)
                case .failure(let failure)?:
                    table.add(service.rawValue, connection.api(service), failure.status == Status.noAnswer ? "no answer" : "error", "", "", "", "")
                case nil:
                    break
                }
            }
            table.lines.forEach(emit)
        }
        if let worst = failures.max(by: { $0.status < $1.status }) {
            failures.forEach { warn($0.line) }
            throw ExitCode(worst.status)
        }
    }
}

/// Asks each of `services` for `health` at once, each on its own thread with its own client: a service
/// that is down costs --timeout once, not once per service. `lht health` and `lht status` share it.
func askHealth(_ services: [ServiceName], connection: Connection) -> [ServiceName: Result<Answer<HealthReply>, Failure>] {
    let results = Mutex<[ServiceName: Result<Answer<HealthReply>, Failure>]>([:])
    DispatchQueue.concurrentPerform(iterations: services.count) { index in
        let service = services[index]
        let result: Result<Answer<HealthReply>, Failure>
        do {
            let client = try Client(connection)
            result = .success(try client.call(Ops.health, NoFields(), at: service))
        } catch {
            result = .failure(error as? Failure ?? .local("\(error)"))
        }
        results.withLock { $0[service] = result }
    }
    return results.withLock { $0 }
}
