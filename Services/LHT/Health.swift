import ArgumentParser
import Foundation
import LHTSchema
import LHTClient

struct Health: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask services whether they are up: version, uptime, newest event seq and counters.",
        discussion: """
            Without a service, all four are asked at once, every instance each list names (a row each, with the \
            partitions it owns and the age of its lease where it has them). Status 3 if any instance did not answer \
            within --timeout.
            """)

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
        let all = try askHealth(services, connection: connection)
        let instances = all.flatMap(\.instances)
        if output.json {
            emit(json(all))
        } else {
            var table = Table("service", "api", "status", "instance", "uptime", "last seq", "owns", "lease", "counters")
            for instance in instances {
                if let health = instance.answer?.value {
                    let counters = health.counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                    table.add(instance.service.rawValue, instance.endpoint, "up \(health.version)", health.instance ?? "-",
                              "\(health.uptimeSeconds) s", String(health.lastSeq), instance.owns?.share ?? "-",
                              instance.owns?.leaseAge ?? "-", counters)
                } else {
                    let status = instance.failure?.status == Status.noAnswer ? "no answer" : "error"
                    table.add(instance.service.rawValue, instance.endpoint, status, "", "", "", "", "", "")
                }
            }
            table.lines.forEach(emit)
            for service in all where service.instances.count > 1 { emit(service.summary) }
        }
        let failures = instances.compactMap(\.failure)
        if let worst = failures.max(by: { $0.status < $1.status }) {
            failures.forEach { warn($0.line) }
            throw ExitCode(worst.status)
        }
    }

    /// One instance asked: its reply as sent. Otherwise `{"<service>": reply}` per service, the reply
    /// `null` from an instance that did not answer, and for a service with several instances a list
    /// of `{"api": endpoint, "health": reply}` in its list's order.
    private func json(_ all: [ServiceHealth]) -> String {
        func reply(_ instance: InstanceHealth) -> String { instance.answer?.rawText ?? "null" }
        if all.count == 1, all[0].instances.count == 1 { return reply(all[0].instances[0]) }
        let parts = all.map { service -> String in
            let value = service.instances.count == 1 ? reply(service.instances[0]) : "[" + service.instances.map { instance in
                "{\"api\":\(JSONValue.string(instance.endpoint).jsonLine),\"health\":\(reply(instance))}"
            }.joined(separator: ",") + "]"
            return "\(JSONValue.string(service.service.rawValue).jsonLine):\(value)"
        }
        return "{" + parts.joined(separator: ",") + "}"
    }
}
