import ArgumentParser
import Foundation
import LHTSchema
import LHTSecurity

/// `lht tokens …`: the HTTP gateway's bearer tokens (PROTOCOL "HTTP gateway"), in the key directory's
/// `tokens/`. Only a token's SHA-256 is stored; the gateway sees a change within 5 s.
struct TokensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Manage the HTTP gateway's bearer tokens: add, list, revoke.",
        discussion: "DIR/tokens/<label>.token (0600) holds a token's user-id, its SHA-256 and when it was made; the token itself is shown once, by add.",
        subcommands: [TokensAdd.self, TokensList.self, TokensRevoke.self])
}

struct TokensAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Make a token that acts as <userId> over HTTP and print it (once: it is not stored).")

    @Argument(help: "The userId the token acts as.")
    var userId: String

    @Option(help: ArgumentHelp("The token's name in tokens/ (default: the userId, then <userId>-2, …).", valueName: "name"))
    var label: String?

    @OptionGroup var keys: KeyDirectoryOption

    func validate() throws {
        if UserID(userId) == nil { throw ValidationError("\"\(userId)\" is not a userId (1-64 of A-Z a-z 0-9 _ -)") }
        if let label, !KeyDirectory.isValidName(label) { throw ValidationError("--label: \"\(label)\" is not a name (letters, digits, '.', '_', '-')") }
    }

    func run() throws {
        let store = TokenStore(keys: try keys.directory())
        let made: (label: String, token: String)
        do {
            made = try store.add(UserID(userId)!, label: label)
        } catch let error as TokenError {
            throw Failure(status: Status.usage, line: "error: \(error)")
        } catch {
            throw Failure.keys(error)
        }
        emit(made.token)
        warn("token \(made.label) for user \(userId): shown once, keep it secret; the gateway accepts it within 5 s")
    }
}

struct TokensList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Show the tokens: label, user and when each was made.")

    @OptionGroup var keys: KeyDirectoryOption
    @OptionGroup var output: OutputOptions

    func run() throws {
        let entries = TokenStore(keys: try keys.directory()).entries()
        if output.json {
            let items: [JSONValue] = entries.map {
                .object(["label": .string($0.label), "userId": .string($0.userId.rawValue), "created": .string($0.created)])
            }
            return emit(JSONValue.object(["tokens": .array(items)]).jsonLine)
        }
        guard !entries.isEmpty else { return emit("no tokens") }
        var table = Table("label", "user", "created")
        for entry in entries { table.add(entry.label, entry.userId.rawValue, entry.created) }
        table.lines.forEach(emit)
    }
}

struct TokensRevoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke", abstract: "Remove a token: the gateway refuses it (401) within 5 s.")

    @Argument(help: "The token's label, as `lht tokens list` shows it.")
    var label: String

    @OptionGroup var keys: KeyDirectoryOption

    func run() throws {
        do {
            try TokenStore(keys: try keys.directory()).revoke(label)
        } catch let error as TokenError {
            throw Failure(status: Status.usage, line: "error: \(error)")
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.keys(error)
        }
        emit("revoked token \(label): the gateway refuses it within 5 s")
    }
}
