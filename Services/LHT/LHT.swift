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

            EXIT STATUS
              0  ok
              1  the service answered with an error; one line on standard error:
                 error: <code> (<field>): <message>
              2  usage error (bad or missing arguments)
              3  the service did not answer within --timeout (the line names the endpoint)
              4  a local failure (e.g. the --svg file cannot be written)
            """,
        version: "1.0.0",
        subcommands: [
            SessionCommand.self, NoAlcCommand.self, UserCommand.self, ReminderCommand.self,
            Subscribe.self, Action.self, Notifications.self, Streak.self, CalendarCommand.self, Health.self, StatusCommand.self,
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
