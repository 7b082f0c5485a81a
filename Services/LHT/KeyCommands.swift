import ArgumentParser
import Foundation
import LHTSchema
import LHTSecurity

/// `lht keys …`: the key directory of a deployment (PROTOCOL "Security"), through LHTSecurity's
/// `KeyDirectory`. These commands work on files only; services see changes to `clients/` within 5 s.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage the CurveZMQ key directory: init, add-user, list, revoke.",
        discussion: """
            DIR/services/ holds a pair per service, DIR/clients/ the public keys of the clients let in (each with \
            its identity: a user-id or role = "admin"), DIR/admin.key_secret the admin certificate lht uses \
            with --keys DIR. Everything is 0700/0600.
            """,
        subcommands: [KeysInit.self, KeysAddUser.self, KeysList.self, KeysRevoke.self])
}

/// `--keys DIR` (LHT_KEYS) for the commands that change or read a key directory.
struct KeyDirectoryOption: ParsableArguments {
    @Option(help: ArgumentHelp("The key directory (env LHT_KEYS).", valueName: "dir"))
    var keys: String?

    init() {}

    func validate() throws {
        if path == nil { throw ValidationError("--keys DIR is required (or set LHT_KEYS)") }
    }

    var path: String? { keys ?? environment["LHT_KEYS"].flatMap { $0.isEmpty ? nil : $0 } }

    /// The directory, which must have been made by `lht keys init`.
    func directory() throws(Failure) -> KeyDirectory {
        let keys = KeyDirectory(path ?? "")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: keys.servicesPath, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw Failure(status: Status.usage, line: "error: \(keys.path) is not a key directory (no services/); create one with: lht keys init \(keys.path)")
        }
        return keys
    }
}

extension Failure {
    /// A key directory's refusal (exists already, no such client) is about the arguments: status 2;
    /// anything else is a local failure (status 4).
    static func keys(_ error: Error) -> Failure {
        switch error as? KeyDirectoryError {
        case .alreadyExists?, .invalidName?, .clientExists?, .noSuchClient?: Failure(status: Status.usage, line: "error: \(error)")
        default: .local("\(error)")
        }
    }
}

/// An absolute path for messages, so what they say can be copied from anywhere.
private func absolute(_ path: String) -> String {
    URL(fileURLWithPath: path).standardizedFileURL.path
}

struct KeysInit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a fresh key directory: a pair per service and the admin certificate.",
        discussion: "Refuses a directory that exists and is not empty. deploy/lht-services start runs it on first start.")

    @Argument(help: ArgumentHelp("Where (default: LHT_KEYS).", valueName: "dir"))
    var directory: String?

    @Flag(help: "In an existing key directory, add a pair for each service that has none (the http-gateway's); nothing else changes.")
    var upgrade = false

    func validate() throws {
        if target == nil { throw ValidationError("give the directory to create (or set LHT_KEYS)") }
    }

    private var target: String? { directory ?? environment["LHT_KEYS"].flatMap { $0.isEmpty ? nil : $0 } }

    func run() throws {
        let path = absolute(target!)
        if upgrade {
            let keys = KeyDirectory(path)
            guard FileManager.default.fileExists(atPath: keys.servicesPath) else {
                throw Failure(status: Status.usage, line: "error: \(path) is not a key directory (no services/); create one with: lht keys init \(path)")
            }
            do {
                let added = try keys.addMissingServicePairs()
                emit(added.isEmpty ? "\(path) has a pair for every service" : "added a pair for \(added.joined(separator: ", ")) to \(path)/services")
            } catch {
                throw Failure.keys(error)
            }
            return
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: path), !entries.isEmpty {
            throw Failure(status: Status.usage, line: "error: \(path) is not empty; lht keys init makes a fresh key directory only")
        }
        let keys: KeyDirectory
        let admin: Certificate
        do {
            // KeyDirectory makes DIR itself (0700); its parents like mkdir -p.
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            keys = try KeyDirectory.create(at: path)
            admin = try keys.adminCertificate()
        } catch {
            throw Failure.keys(error)
        }
        emit("created key directory \(path)")
        emit("  services/     a pair for each of \(KeyDirectory.serviceNames.joined(separator: ", "))")
        emit("  clients/      admin.key (role admin, \(admin.fingerprint))")
        emit("  admin.key_secret  the admin certificate lht uses with --keys")
        emit("start the services with --keys \(path); for lht: export LHT_KEYS=\(path)")
    }
}

struct KeysAddUser: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-user",
        abstract: "Make a user's certificate pair and let it in (clients/<userId>.key).",
        discussion: """
            Writes <userId>.key and <userId>.key_secret (0600) into --out for the user's own machine or phone, \
            which also needs the services' public keys (DIR/services/*.key); there: \
            lht --cert <userId>.key_secret --server-keys <dir with the *.key files> …. Services let the key in within 5 s.
            """)

    @Argument(help: "The userId the certificate acts as.")
    var userId: String

    @Option(help: ArgumentHelp("Where to write the pair (default: the current directory).", valueName: "dir"))
    var out: String = "."

    @OptionGroup var keys: KeyDirectoryOption

    func validate() throws {
        if UserID(userId) == nil { throw ValidationError("\"\(userId)\" is not a userId (1-64 of A-Z a-z 0-9 _ -)") }
    }

    func run() throws {
        let keys = try keys.directory()
        let out = absolute(out)
        for file in ["\(out)/\(userId).key", "\(out)/\(userId).key_secret"] where FileManager.default.fileExists(atPath: file) {
            throw Failure(status: Status.usage, line: "error: \(file) exists already; choose another --out")
        }
        let certificate: Certificate
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            certificate = try keys.addUser(UserID(userId)!, outDirectory: out)
        } catch {
            throw Failure.keys(error)
        }
        let servicesPath = absolute(keys.servicesPath)
        emit("added user \(userId) (\(certificate.fingerprint)): \(absolute(keys.clientsPath))/\(userId).key; services let it in within 5 s")
        emit("  \(out)/\(userId).key_secret  the user's secret certificate (0600): copy it to the user's machine only")
        emit("  \(out)/\(userId).key         its public part")
        emit("the user's machine also needs the services' public keys \(servicesPath)/*.key; there:")
        emit("  lht --cert \(userId).key_secret --server-keys <dir with the four *.key files> …")
    }
}

struct KeysList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "Show the clients let in: name, identity, fingerprint and what is wrong with a certificate.")

    @OptionGroup var keys: KeyDirectoryOption
    @OptionGroup var output: OutputOptions

    func run() throws {
        let directory = try keys.directory()
        let clients = directory.clients()
        if output.json {
            let items: [JSONValue] = clients.map { client in
                var item: [String: JSONValue] = [
                    "name": .string(client.name), "fingerprint": .string(Certificate.fingerprint(client.publicKey)),
                    "publicKey": .string(client.publicKey),
                ]
                item["identity"] = client.principal.map { .string(identity($0)) } ?? .null
                item["problem"] = client.problem.map(JSONValue.string) ?? .null
                return .object(item)
            }
            return emit(JSONValue.object(["clients": .array(items)]).jsonLine)
        }
        guard !clients.isEmpty else { return emit("no clients in \(absolute(directory.clientsPath))") }
        var table = Table("name", "identity", "fingerprint", "problem")
        for client in clients {
            table.add(client.name, client.principal.map(identity) ?? "-", Certificate.fingerprint(client.publicKey), client.problem ?? "")
        }
        table.lines.forEach(emit)
    }

    private func identity(_ principal: Principal) -> String {
        switch principal {
        case .admin: "admin"
        case .user(let id): "user \(id)"
        case .service(let name): "service \(name)"
        }
    }
}

struct KeysRevoke: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Remove a client's key from clients/: services refuse its new connections within 5 s.",
        discussion: "Requests on connections it has open already get unauthorized; open subscriptions may last until it reconnects.")

    @Argument(help: "The client's name, as `lht keys list` shows it.")
    var name: String

    @OptionGroup var keys: KeyDirectoryOption

    func run() throws {
        let keys = try keys.directory()
        let client = keys.clients().first { $0.name == name }
        do {
            try keys.revoke(name)
        } catch {
            throw Failure.keys(error)
        }
        let fingerprint = client.map { " (\(Certificate.fingerprint($0.publicKey)))" } ?? ""
        emit("revoked \(name)\(fingerprint): services refuse its key within 5 s")
        if name == KeyDirectory.adminName { warn("note: lht --keys acts as admin and is refused now too") }
    }
}
