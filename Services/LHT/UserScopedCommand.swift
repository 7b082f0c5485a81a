import ArgumentParser

/// What every command that asks a service about one user takes: `--user`, `--json` and the connection.
struct UserCommandOptions: ParsableArguments {
    @OptionGroup var user: UserOption
    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    init() {}
}

/// A command that asks a service about one user: its options are `UserCommandOptions`, read by name.
protocol UserScopedCommand: ParsableCommand {
    var options: UserCommandOptions { get }
}

extension UserScopedCommand {
    var user: UserOption { options.user }
    var output: OutputOptions { options.output }
    var connection: Connection { options.connection }
}

extension CommandConfiguration {
    /// A command that only groups its subcommands (`lht session log`).
    static func group(_ name: String, _ abstract: String, _ subcommands: [ParsableCommand.Type]) -> CommandConfiguration {
        CommandConfiguration(commandName: name, abstract: abstract, subcommands: subcommands)
    }
}
