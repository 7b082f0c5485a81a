import ArgumentParser
import Foundation
import LHTClient
import LHTSchema

/// `lht`: the command-line client of the Smart Reminders services, speaking PROTOCOL.md over ZeroMQ.
@main
struct LHT: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lht",
        abstract: "Log activity, plan reminders and follow notifications of the Smart Reminders services.",
        discussion: """
            Every command talks to the services over ZeroMQ (PROTOCOL.md). Endpoints default to \
            loopback (\(defaultPorts)) and can be set \
            by flag or LHT_* environment variable; LHT_USER sets the default --user.

            KEYS
              A deployment with keys (services started with --keys DIR) speaks CurveZMQ. On the machine             that runs the services, --keys DIR (env LHT_KEYS) makes lht act as the admin of DIR. A user's             own machine gives --cert NAME.key_secret (env LHT_CERT, from `lht keys add-user`) and             --server-keys DIR (env LHT_SERVER_KEYS), a directory with the services' public keys             <executable>.key (default: --keys DIR, else the --cert file's directory). `lht keys` manages             the key directory.

            EXIT STATUS
              0  ok
              1  the service answered with an error; one line on standard error:
                 error: <code> (<field>): <message>
              2  usage error (bad or missing arguments, keys that cannot be used)
              3  the service did not answer within --timeout (the line names the endpoint)
              4  a local failure (e.g. the --svg file cannot be written)
            """,
        version: "1.0.0",
        subcommands: [
            SessionCommand.self, NoAlcCommand.self, UserCommand.self, ReminderCommand.self,
            Subscribe.self, Action.self, Notifications.self, Streak.self, CalendarCommand.self, Health.self, StatusCommand.self,
            KeysCommand.self, TokensCommand.self,
        ])

    /// "session logger 7301, planner 7311, …": each service's default api port, from the endpoint table.
    private static var defaultPorts: String {
        ServiceName.allCases.map { service in
            let endpoint = service.defaultEndpoint(.api)
            let port = endpoint.lastIndex(of: ":").map { endpoint[endpoint.index(after: $0)...] } ?? Substring(endpoint)
            return "\(service.flagStem.replacingOccurrences(of: "-", with: " ")) \(port)"
        }.joined(separator: ", ")
    }

    /// ArgumentParser's own `main`, with the exit statuses above: usage errors are 2, not 64.
    static func main() {
        var command: ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            usageExit(error)
        }
        do {
            try command.run()
        } catch let failure as Failure {
            warn(failure.line)
            Foundation.exit(failure.status)
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let error as ValidationError {
            usageExit(error)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            warn("error: \(error)")
            Foundation.exit(Status.local)
        }
    }

    private static func usageExit(_ error: Error) -> Never {
        if exitCode(for: error) == .success { exit(withError: error) }
        warn(fullMessage(for: error))
        Foundation.exit(Status.usage)
    }
}
