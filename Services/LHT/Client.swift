import ArgumentParser
import Foundation
import LHTSchema
import LHTClient
import ZeroMQ

extension ServiceName {
    /// Whether a subscription to `prefix` can match anything this service publishes.
    func publishes(matching prefix: String) -> Bool {
        Events.published(by: self).contains { prefix.hasPrefix($0.name + ".") || ($0.name + ".").hasPrefix(prefix) }
    }

}

let environment = ProcessInfo.processInfo.environment

/// Exit statuses, as `lht --help` documents them.
enum Status {
    static let ok: Int32 = 0
    static let serviceError: Int32 = 1
    static let usage: Int32 = 2
    static let noAnswer: Int32 = 3
    static let local: Int32 = 4
}

/// Why a command failed, as one line on standard error and an exit status.
struct Failure: Error {
    let status: Int32
    let line: String

    /// The service answered with an error: `error: <code> (<field>): <message>`.
    static func service(code: String, field: String?, message: String) -> Failure {
        // Messages often repeat the field ("data.start: …"); say it once.
        var text = message
        if let field, text.hasPrefix(field + ": ") { text.removeFirst(field.count + 2) }
        return Failure(status: Status.serviceError, line: "error: \(code)" + (field.map { " (\($0))" } ?? "") + ": \(text)")
    }

    static func noAnswer(_ service: ServiceName, endpoint: String, op: String, seconds: Double) -> Failure {
        Failure(status: Status.noAnswer,
                line: "error: \(service.rawValue) did not answer \(op) at \(endpoint) within \(seconds.formatted()) s (is it running?)")
    }

    /// A request that is not safe to repeat reached an instance that did not answer: it was not sent to
    /// another, and whether it was carried out is unknown.
    static func mayHaveBeenDone(_ service: ServiceName, endpoint: String, op: String, seconds: Double) -> Failure {
        Failure(status: Status.noAnswer,
                line: "error: \(service.rawValue) did not answer \(op) at \(endpoint) within \(seconds.formatted()) s; it may have been "
                    + "carried out, so it was not sent to another instance (check before trying again)")
    }

    static func local(_ message: String) -> Failure { Failure(status: Status.local, line: "error: \(message)") }
}

extension Double {
    /// 3 → "3", 0.5 → "0.5".
    func formatted() -> String { self == rounded() ? String(Int(self)) : String(self) }
}

/// A successful reply: the decoded data and its bytes as the service sent them.
struct Answer<Value> {
    let value: Value
    let raw: Data

    var rawText: String { String(decoding: raw, as: UTF8.self) }
}

extension Answer: Sendable where Value: Sendable {}

/// One command's connections to the services: a Lazy-Pirate `ServiceClient` per endpoint, every call bounded by
/// --timeout, speaking CurveZMQ when keys are given (each service with its own public key).
final class Client {
    let connection: Connection
    let context: Context
    /// nil: plaintext.
    let keys: ClientKeys?
    private var clients: [ServiceName: ServiceClient] = [:]

    init(_ connection: Connection) throws(Failure) {
        self.connection = connection
        keys = try connection.security.load()
        do {
            context = try Context()
        } catch {
            throw Failure.local("cannot open a ZeroMQ context: \(error)")
        }
    }

    private func client(_ service: ServiceName) throws(Failure) -> ServiceClient {
        if let client = clients[service] { return client }
        let client = ServiceClient(context: context, endpoints: try connection.apiEndpoints(service), credentials: try keys?.credentials(for: service))
        clients[service] = client
        return client
    }

    /// Calls `op` at the service the catalog names for it (`health` and `events.since`, which every
    /// service answers, at `service`); the reply decoded as the op's type, with its data bytes for --json.
    func call<Request, Reply>(_ op: Op<Request, Reply>, _ request: Request, at service: ServiceName? = nil) throws(Failure) -> Answer<Reply> {
        guard let service = service ?? op.info.service else { preconditionFailure("\(op.name) is answered by every service: say which") }
        let client = try client(service)
        do {
            let (value, data) = try client.callWithData(op, request, timeoutMilliseconds: connection.milliseconds)
            return Answer(value: value, raw: data)
        } catch {
            throw Failure(error, service: service, op: op.name, client: client, seconds: connection.seconds)
        }
    }
}

extension Failure {
    /// A `ServiceClient` failure as lht reports it: no answer (status 3, naming the endpoint), or the
    /// service's own error (status 1, `error: <code> (<field>): <message>`).
    init(_ error: WireError, service: ServiceName, op: String, client: ServiceClient, seconds: Double) {
        // ServiceClient's own "did not answer" is `unavailable` without a field after a call that got no
        // reply; a service that answers `unavailable` (the notifier when the session logger is down) replied.
        switch client.lastCall {
        case .unanswered where error.code == .unavailable && error.field == nil:
            self = .noAnswer(service, endpoint: "\(client.instances)", op: op, seconds: seconds)
        case .mayHaveBeenDone(let endpoint) where error.code == .unavailable && error.field == nil:
            self = .mayHaveBeenDone(service, endpoint: endpoint, op: op, seconds: seconds)
        case .answered(let tries) where tries > 1 && error.code == .notFound && op == Ops.reminderDelete.name:
            // The earlier, unanswered try went to an instance that may have deleted it.
            self = .service(code: error.code.rawValue, field: error.field,
                            message: error.message + " (an earlier try went unanswered and may have deleted it)")
        default:
            self = .service(code: error.code.rawValue, field: error.field, message: error.message)
        }
    }
}

/// Writes a line to standard output at once (for streams read by other programs).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
