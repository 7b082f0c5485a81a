import ArgumentParser
import Foundation
import LHTClient
import LHTSchema

/// `lht status`: the whole system on one screen, from every service's `health` asked at once.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "One screen for the operator: per service instance up or down, its name, version, uptime, last seq, owned partitions, lease age, upstream lag and last error.",
        discussion: """
            Every instance that the endpoint lists name is asked for health at once (as `lht health` does), a row \
            each. Owns is the share of the partitions whose time-driven work the instance does, lease how long ago \
            it last renewed its lease; a service with several instances gets a line that adds the shares up. The \
            upstreams column shows, for each upstream a service follows, its lag in events (upstream seq − applied \
            seq). Status 3 if any instance did not answer within --timeout, 1 if one answered with an error.
            """)

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let all = try askHealth(ServiceName.allCases, connection: connection)
        if output.json {
            emit(JSONValue.object(["services": .array(all.map(json))]).jsonLine)
        } else {
            var table = Table("service", "api", "status", "instance", "version", "uptime", "last seq", "owns", "lease", "upstreams", "last error")
            for instance in all.flatMap(\.instances) {
                if let health = instance.answer?.value {
                    let upstreams = health.upstreams.map { "\($0.name) lag \($0.lag) (\($0.appliedSeq)/\($0.upstreamSeq))" }
                    table.add(instance.service.rawValue, instance.endpoint, "up", health.instance ?? "-", health.version,
                              uptimeText(health.uptimeSeconds), String(health.lastSeq), instance.owns?.share ?? "-",
                              instance.owns?.leaseAge ?? "-", upstreams.isEmpty ? "-" : upstreams.joined(separator: ", "),
                              health.lastError.map(oneLine) ?? "-")
                } else if let failure = instance.failure {
                    table.add(instance.service.rawValue, instance.endpoint, "down", "", "", "", "", "", "", "",
                              failure.status == Status.noAnswer ? "no answer within \(connection.seconds.formatted()) s" : reason(failure))
                }
            }
            table.lines.forEach(emit)
            for service in all where service.instances.count > 1 { emit(service.summary) }
        }
        if let worst = all.flatMap(\.instances).compactMap(\.failure?.status).max() { throw ExitCode(worst) }
    }

    private func reason(_ failure: Failure) -> String {
        oneLine(failure.line.hasPrefix("error: ") ? String(failure.line.dropFirst(7)) : failure.line)
    }

    /// A service: `api` as given, `up` when any instance answered, the first answering instance's
    /// fields (as before there were lists), `instances` with every one, and the owned partitions added up.
    private func json(_ service: ServiceHealth) -> JSONValue {
        var object: [String: JSONValue] = ["service": .string(service.service.rawValue), "api": .string(connection.api(service.service)),
                                           "up": .bool(!service.answered.isEmpty)]
        if let first = service.answered.first {
            object.merge(fields(first)) { mine, _ in mine }
        } else {
            object["error"] = .string(service.instances.count == 1 ? error(service.instances[0])
                                      : "no instance answered within \(connection.seconds.formatted()) s")
        }
        object["instances"] = .array(service.instances.map { instance in
            .object(["api": .string(instance.endpoint), "up": .bool(instance.answer != nil)].merging(fields(instance)) { mine, _ in mine })
        })
        if let owned = service.owned {
            object["ownedPartitions"] = .object(["partitions": .number(Double(owned.partitions)), "of": .number(Double(owned.of))])
        }
        return .object(object)
    }

    private func error(_ instance: InstanceHealth) -> String {
        guard let failure = instance.failure else { return "" }
        return failure.status == Status.noAnswer ? "no answer at \(instance.endpoint) within \(connection.seconds.formatted()) s" : reason(failure)
    }

    /// One instance's health as JSON members, or its `error`.
    private func fields(_ instance: InstanceHealth) -> [String: JSONValue] {
        guard let health = instance.answer?.value else { return ["error": .string(error(instance))] }
        var object: [String: JSONValue] = [:]
        if let name = health.instance { object["instance"] = .string(name) }
        object["version"] = .string(health.version)
        object["uptimeSeconds"] = .number(Double(health.uptimeSeconds))
        object["lastSeq"] = .number(Double(health.lastSeq))
        object["upstreams"] = .array(health.upstreams.map { upstream in
            .object(["name": .string(upstream.name), "appliedSeq": .number(Double(upstream.appliedSeq)),
                     "upstreamSeq": .number(Double(upstream.upstreamSeq)), "lag": .number(Double(upstream.lag))])
        })
        object["lastError"] = health.lastError.map(JSONValue.string) ?? .null
        if let owns = instance.owns {
            var share: [String: JSONValue] = ["partitions": .number(Double(owns.partitions)), "of": .number(Double(owns.of))]
            if let age = owns.leaseAgeSeconds { share["leaseAgeSeconds"] = .number(age) }
            object["owns"] = .object(share)
        }
        return object
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
