import ArgumentParser
import Foundation
import LHTClient
import LHTSchema

/// `lht status`: the whole system on one screen, from every service's `health` asked at once.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "One screen for the operator: per service up or down, the instance that answered, version, uptime, last seq, upstream lag and last error.",
        discussion: """
            All four services are asked for health at once (as `lht health` does). The upstreams column shows, \
            for each upstream a service follows, its lag in events (upstream seq − applied seq). \
            Status 3 if any service did not answer within --timeout, 1 if one answered with an error.
            """)

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let services = ServiceName.allCases
        let answers = askHealth(services, connection: connection)
        if output.json {
            emit(JSONValue.object(["services": .array(services.map { json($0, answers[$0]) })]).jsonLine)
        } else {
            var table = Table("service", "status", "instance", "version", "uptime", "last seq", "upstreams", "last error")
            for service in services {
                switch answers[service] {
                case .success(let answer)?:
                    let health = answer.value
                    let upstreams = health.upstreams.map { "\($0.name) lag \($0.lag) (\($0.appliedSeq)/\($0.upstreamSeq))" }
                    table.add(service.rawValue, "up", health.instance ?? "-", health.version, uptimeText(health.uptimeSeconds), String(health.lastSeq),
                              upstreams.isEmpty ? "-" : upstreams.joined(separator: ", "), health.lastError.map(oneLine) ?? "-")
                case .failure(let failure)?:
                    table.add(service.rawValue, "down", "", "", "", "", "", reason(failure, service))
                case nil:
                    break
                }
            }
            table.lines.forEach(emit)
        }
        let statuses = services.compactMap { service -> Int32? in
            if case .failure(let failure) = answers[service] { return failure.status }
            return nil
        }
        if let worst = statuses.max() { throw ExitCode(worst) }
    }

    private func reason(_ failure: Failure, _ service: ServiceName) -> String {
        failure.status == Status.noAnswer
            ? "no answer at \(connection.api(service)) within \(connection.seconds.formatted()) s"
            : oneLine(failure.line.hasPrefix("error: ") ? String(failure.line.dropFirst(7)) : failure.line)
    }

    private func json(_ service: ServiceName, _ answer: Result<Answer<HealthReply>, Failure>?) -> JSONValue {
        var object: [String: JSONValue] = ["service": .string(service.rawValue), "api": .string(connection.api(service))]
        switch answer {
        case .success(let answer)?:
            let health = answer.value
            object["up"] = .bool(true)
            if let instance = health.instance { object["instance"] = .string(instance) }
            object["version"] = .string(health.version)
            object["uptimeSeconds"] = .number(Double(health.uptimeSeconds))
            object["lastSeq"] = .number(Double(health.lastSeq))
            object["upstreams"] = .array(health.upstreams.map { upstream in
                .object(["name": .string(upstream.name), "appliedSeq": .number(Double(upstream.appliedSeq)),
                         "upstreamSeq": .number(Double(upstream.upstreamSeq)), "lag": .number(Double(upstream.lag))])
            })
            object["lastError"] = health.lastError.map(JSONValue.string) ?? .null
        case .failure(let failure)?:
            object["up"] = .bool(false)
            object["error"] = .string(reason(failure, service))
        case nil:
            object["up"] = .bool(false)
        }
        return .object(object)
    }
}

/// 42 → "42s", 3720 → "1h02m", 90000 → "1d01h".
func uptimeText(_ seconds: Int64) -> String {
    func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }
    switch seconds {
    case ..<60: return "\(seconds)s"
    case ..<3600: return "\(seconds / 60)m\(two(seconds % 60))s"
    case ..<86_400: return "\(seconds / 3600)h\(two(seconds / 60 % 60))m"
    default: return "\(seconds / 86_400)d\(two(seconds / 3600 % 24))h"
    }
}

/// A message on one line, at most 80 characters, for a table cell.
private func oneLine(_ text: String) -> String {
    let flat = text.split(whereSeparator: \.isNewline).joined(separator: " ")
    return flat.count > 80 ? String(flat.prefix(79)) + "…" : flat
}
