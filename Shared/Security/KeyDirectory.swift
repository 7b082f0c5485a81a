import Foundation
import LHTSchema

/// Who is on the other end of an authenticated connection.
public enum Principal: Sendable, Hashable, CustomStringConvertible {
    case service(String)
    case admin
    case user(UserID)

    /// Services and admins may do everything; a user only what concerns its own userId.
    public var isAdminEquivalent: Bool {
        if case .user = self { return false }
        return true
    }

    public var userID: UserID? {
        if case .user(let id) = self { return id }
        return nil
    }

    public var description: String {
        switch self {
        case .service(let name): "service \(name)"
        case .admin: "admin"
        case .user(let id): "user \(id)"
        }
    }

    /// A client's identity from its certificate's metadata: exactly one of a valid `user-id`
    /// and `role = "admin"`, otherwise nil (the key is not let in).
    public init?(clientMetadata metadata: [String: String]) {
        switch (metadata["user-id"], metadata["role"]) {
        case (let userId?, nil):
            guard let id = UserID(userId) else { return nil }
            self = .user(id)
        case (nil, "admin"?): self = .admin
        default: return nil
        }
    }
}

/// One certificate in `clients/`.
public struct ClientEntry: Sendable, Equatable {
    public let name: String
    public let publicKey: String
    /// nil when the file is unreadable or names no valid identity: then the key is not let in.
    public let principal: Principal?
    /// Why there is no principal.
    public let problem: String?
}

public enum KeyDirectoryError: Error, Equatable, CustomStringConvertible {
    case alreadyExists(String)
    case invalidName(String)
    case clientExists(String)
    case noSuchClient(String)
    case io(path: String, reason: String)

    public var description: String {
        switch self {
        case .alreadyExists(let path): "\(path) already holds keys"
        case .invalidName(let name): "\(name) is not a valid certificate name (letters, digits, '.', '_', '-')"
        case .clientExists(let name): "a client named \(name) exists already (revoke it first)"
        case .noSuchClient(let name): "no client named \(name)"
        case .io(let path, let reason): "\(path): \(reason)"
        }
    }
}

/// The key directory a service gets with `--keys DIR`:
///
///     services/<executable>.key, .key_secret   one pair per service
///     clients/<name>.key                       the clients let in, public part with their identity
///     admin.key, admin.key_secret              the local admin client's pair (for `lht`), made by `create`
///
/// Directories are 0700 and files 0600 whatever the umask.
public struct KeyDirectory: Sendable {
    public static let serviceNames = ["session-logger", "reminder-planner", "notifier", "noalc-streak", "http-gateway"]
    public static let adminName = "admin"

    public let path: String
    public var servicesPath: String { path + "/services" }
    public var clientsPath: String { path + "/clients" }

    public init(_ path: String) { self.path = path }

    // MARK: Reading

    /// A service's own pair; refuses a secret file group or others can access.
    public func serviceCertificate(_ executable: String) throws -> Certificate {
        try Certificate.loadSecret("\(servicesPath)/\(executable).key_secret")
    }

    /// Another service's public key, to connect to it as an upstream.
    public func servicePublicKey(_ executable: String) throws -> String {
        try Certificate.loadPublic("\(servicesPath)/\(executable).key").publicKey
    }

    /// The local admin client's pair.
    public func adminCertificate() throws -> Certificate {
        try Certificate.loadSecret("\(path)/\(KeyDirectory.adminName).key_secret")
    }

    /// Every `services/*.key`, each acting as its service. Unreadable files are skipped.
    public func servicePrincipals() -> [String: Principal] {
        var keys: [String: Principal] = [:]
        for name in certificateNames(in: servicesPath) {
            if let certificate = try? Certificate.loadPublic("\(servicesPath)/\(name).key") {
                keys[certificate.publicKey] = .service(name)
            }
        }
        return keys
    }

    /// Every `clients/*.key`, sorted by name, admitted or not.
    public func clients() -> [ClientEntry] {
        certificateNames(in: clientsPath).map { name in
            do {
                let certificate = try Certificate.loadPublic("\(clientsPath)/\(name).key")
                let principal = Principal(clientMetadata: certificate.metadata)
                return ClientEntry(name: name, publicKey: certificate.publicKey, principal: principal,
                                   problem: principal == nil ? "needs exactly one of a valid user-id and role = \"admin\"" : nil)
            } catch {
                return ClientEntry(name: name, publicKey: "", principal: nil, problem: "\(error)")
            }
        }
    }

    private func certificateNames(in directory: String) -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".key") && !$0.hasPrefix(".") }.map { String($0.dropLast(4)) }.sorted()
    }

    // MARK: Managing

    /// Creates a fresh directory: a pair for each of the four services and the admin client
    /// (its pair at the top, its public part in `clients/`). Refuses a directory that has keys.
    @discardableResult
    public static func create(at path: String) throws -> KeyDirectory {
        let keys = KeyDirectory(path)
        if FileManager.default.fileExists(atPath: keys.servicesPath) || FileManager.default.fileExists(atPath: keys.clientsPath) {
            throw KeyDirectoryError.alreadyExists(path)
        }
        for directory in [path, keys.servicesPath, keys.clientsPath] { try makePrivateDirectory(directory) }
        for name in serviceNames { try Certificate.generate().write(basePath: "\(keys.servicesPath)/\(name)") }
        let admin = try Certificate.generate(metadata: ["role": "admin"])
        try admin.write(basePath: "\(path)/\(adminName)")
        try admin.writePublic(to: "\(keys.clientsPath)/\(adminName).key")
        return keys
    }

    /// Adds a pair for each service in `serviceNames` that has none (a directory made before the
    /// http-gateway had one); returns the names added. Existing pairs are left as they are.
    @discardableResult
    public func addMissingServicePairs() throws -> [String] {
        try KeyDirectory.makePrivateDirectory(servicesPath)
        let missing = KeyDirectory.serviceNames.filter { !FileManager.default.fileExists(atPath: "\(servicesPath)/\($0).key_secret") }
        for name in missing { try Certificate.generate().write(basePath: "\(servicesPath)/\(name)") }
        return missing
    }

    /// Makes a certificate for a user: `<userId>.key` and `<userId>.key_secret` in `outDirectory`
    /// (for a client elsewhere) and the public part as `clients/<userId>.key` (letting it in).
    @discardableResult
    public func addUser(_ userId: UserID, outDirectory: String) throws -> Certificate {
        let clientPath = "\(clientsPath)/\(userId).key"
        if FileManager.default.fileExists(atPath: clientPath) { throw KeyDirectoryError.clientExists(userId.rawValue) }
        let certificate = try Certificate.generate(metadata: ["user-id": userId.rawValue])
        try KeyDirectory.makePrivateDirectory(clientsPath)
        try certificate.write(basePath: "\(outDirectory)/\(userId)")
        try certificate.writePublic(to: clientPath)
        return certificate
    }

    /// Removes `clients/<name>.key`: new connections with that key are refused and, since a service
    /// resolves the principal per request, so are requests on connections already open.
    public func revoke(_ name: String) throws {
        guard KeyDirectory.isValidName(name) else { throw KeyDirectoryError.invalidName(name) }
        let clientPath = "\(clientsPath)/\(name).key"
        guard unlink(clientPath) == 0 else {
            throw errno == ENOENT ? KeyDirectoryError.noSuchClient(name) : KeyDirectoryError.io(path: clientPath, reason: errnoText())
        }
    }

    /// Plain names only: no path separators, nothing hidden.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && name.utf8.allSatisfy {
            switch $0 {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
    }

    /// mkdir 0700, and chmod too: mkdir's mode is masked by the umask, and the directory may exist.
    static func makePrivateDirectory(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw KeyDirectoryError.io(path: path, reason: errnoText()) }
        if chmod(path, 0o700) != 0 { throw KeyDirectoryError.io(path: path, reason: errnoText()) }
    }
}
