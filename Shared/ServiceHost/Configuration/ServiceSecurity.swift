import Foundation
import LHTClient
import LHTSchema
import LHTSecurity
import Logging
import ZeroMQ

/// A service's keys (PROTOCOL "Security"): its own certificate, checked when the flags are read,
/// and the key directory it admits clients from.
public struct SecuritySettings: Sendable {
    public let keys: KeyDirectory
    public let certificate: Certificate

    /// Loads `services/<service>.key_secret` from `directory`; one that group or others can read is refused.
    public init(directory: String, service: ServiceName) throws {
        keys = KeyDirectory(directory)
        certificate = try keys.serviceCertificate(service.rawValue)
    }

    /// How this service connects to `upstream`: as a CURVE client with its own certificate.
    public func credentials(for upstream: ServiceName) throws -> CurveCredentials {
        CurveCredentials(publicKey: certificate.publicKey, secretKey: certificate.secretKey ?? "",
                         serverKey: try keys.servicePublicKey(upstream.rawValue))
    }
}

/// Who sent a request or a subscription.
public indirect enum Caller: Sendable, Hashable {
    /// The service runs without keys: loopback only, everyone may do everything (as before security).
    case local
    /// An authenticated peer (its Z85 public key), with its identity as the key directory says now.
    case principal(Principal, key: String)
    /// An authenticated peer whose key has been removed since it connected (or none at all).
    case revoked(key: String?)
    /// A request whose `as` names `user`, from a sender that may act for it (PROTOCOL "Acting for a
    /// user"): every per-user rule applies as if `user` had sent it.
    case acting(for: UserID, sender: Caller)
    /// A user's request whose `as` names another user: refused whatever it asks.
    case impersonating(UserID, sender: Caller)

    /// The caller a request with `as` = `user` stands for; a user naming itself stays itself.
    public func acting(as user: UserID?) -> Caller {
        guard let user else { return self }
        switch self {
        case .local: return .acting(for: user, sender: self)
        case .principal(let principal, _):
            if principal.isAdminEquivalent { return .acting(for: user, sender: self) }
            return principal.userID == user ? self : .impersonating(user, sender: self)
        case .revoked, .acting, .impersonating: return self
        }
    }

    var mayDoEverything: Bool {
        switch self {
        case .local: true
        case .principal(let principal, _): principal.isAdminEquivalent
        case .revoked, .acting, .impersonating: false
        }
    }

    /// The user a caller that is not admin-equivalent may act for.
    var user: UserID? {
        switch self {
        case .principal(let principal, _): principal.userID
        case .acting(let user, _): user
        case .local, .revoked, .impersonating: nil
        }
    }

    /// Why a caller that may act for nobody is refused.
    var refusal: WireError {
        if case .impersonating = self { return WireError(.unauthorized, "a user acts only for itself", field: "as") }
        return WireError(.unauthorized, "this key is no longer let in")
    }

    /// The key's short fingerprint, for logs.
    var fingerprint: String {
        switch self {
        case .local: "local"
        case .principal(_, let key), .revoked(let key?): Certificate.fingerprint(key)
        case .revoked(nil): "no key"
        case .acting(let user, let sender): "\(sender.fingerprint) as \(user)"
        case .impersonating(let user, let sender): "\(sender.fingerprint) as \(user)"
        }
    }
}

/// The running half: the ZAP handler of the service's context and how its sockets are made CURVE servers.
final class SocketSecurity {
    let settings: SecuritySettings
    private let zap: ZAPHandler

    /// Starts the ZAP handler on `context`: before any CURVE server is bound, since libzmq lets
    /// every client in while no handler is bound.
    init(_ settings: SecuritySettings, context: Context, logger: Logger) throws {
        self.settings = settings
        zap = ZAPHandler(keys: settings.keys, logger: logger)
        try zap.start(on: context)
    }

    deinit { zap.stop() }

    func makeServer(_ socket: Socket) throws {
        try socket.setCurveServer(true)
        try socket.setCurveKeys(publicKey: settings.certificate.publicKey, secretKey: settings.certificate.secretKey ?? "")
        try socket.setZAPDomain("lht")
    }

    /// The caller behind a message's `User-Id` property, resolved against the current key set.
    func caller(userId: String?) -> Caller {
        guard let userId, let principal = zap.resolve(userId) else { return .revoked(key: userId) }
        return .principal(principal, key: userId)
    }

    var refusals: [ZAPHandler.Refusal: Int] { zap.refusals }
}
