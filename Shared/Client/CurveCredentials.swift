import ZeroMQ

/// What a client needs to speak CurveZMQ to a service (PROTOCOL "Security"): its own key pair and
/// the service's public key, all Z85 text as in the certificate files.
public struct CurveCredentials: Sendable, Hashable {
    public let publicKey: String
    public let secretKey: String
    public let serverKey: String

    public init(publicKey: String, secretKey: String, serverKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.serverKey = serverKey
    }
}

extension Socket {
    /// Makes this socket a CURVE client with `credentials` (nil: plaintext); call before `connect`.
    public func secure(with credentials: CurveCredentials?) throws {
        guard let credentials else { return }
        try setCurveKeys(publicKey: credentials.publicKey, secretKey: credentials.secretKey)
        try setCurveServerKey(credentials.serverKey)
    }
}
