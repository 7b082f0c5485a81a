import Foundation
import LHTSchema
import LHTSecurity
import Logging
import Testing
import ZeroMQ

/// A key directory in a fresh temporary directory, removed at deinit.
final class TemporaryKeys {
    let root: String
    let keys: KeyDirectory
    /// Where user certificates handed out to clients go.
    let out: String

    init() throws {
        root = NSTemporaryDirectory() + "lht-security-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        keys = try KeyDirectory.create(at: root + "/keys")
        out = root + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    @discardableResult
    func addUser(_ name: String) throws -> Certificate {
        try keys.addUser(UserID(name)!, outDirectory: out)
    }
}

let testLogger = Logger(label: "lht-security-tests")

/// A CURVE ROUTER on a wildcard port and, unless told otherwise, a ZAP handler started first.
final class CurveServer {
    let context: Context
    let router: Socket
    let endpoint: String
    let zap: ZAPHandler?
    let serverCertificate: Certificate

    init(keys: KeyDirectory, withZAP: Bool = true, type: SocketType = .router) throws {
        context = try Context()
        if withZAP {
            let handler = ZAPHandler(keys: keys, logger: testLogger, reloadInterval: 0.5)
            try handler.start(on: context)
            zap = handler
        } else {
            zap = nil
        }
        serverCertificate = try keys.serviceCertificate("session-logger")
        router = try Socket(context, type)
        try router.setCurveServer(true)
        try router.setCurveKeys(publicKey: serverCertificate.publicKey, secretKey: serverCertificate.secretKey!)
        endpoint = try router.bind("tcp://127.0.0.1:*")
    }

    deinit {
        router.close()
        zap?.stop()
    }

    /// A DEALER client with `certificate` (nil: plaintext) that trusts `serverKey`.
    func client(_ certificate: Certificate?, serverKey: String? = nil) throws -> Socket {
        let client = try Socket(context, .dealer)
        if let certificate {
            try client.setCurveKeys(publicKey: certificate.publicKey, secretKey: certificate.secretKey!)
            try client.setCurveServerKey(serverKey ?? serverCertificate.publicKey)
        }
        try client.connect(endpoint)
        return client
    }

    /// Serves one request if one arrives within `milliseconds`: the echo reply goes back and the
    /// request's User-Id is returned (".none" when nothing arrived).
    func serveOne(within milliseconds: Int = 1000) throws -> (userId: String?, body: Data)? {
        guard try Poller.readable([router], timeoutMilliseconds: milliseconds)[0],
              let (frames, userId) = try router.receiveMultipart(property: "User-Id") else { return nil }
        try router.send(multipart: [frames[0], Data(), Data("re: ".utf8) + frames.last!])
        return (userId, frames.last!)
    }

    /// Sends a request from `client` and returns the principal the server resolved and the reply,
    /// or nil when the server saw nothing within `milliseconds`.
    func ask(_ client: Socket, within milliseconds: Int = 1000) throws -> (principal: Principal?, userId: String?, reply: Data?)? {
        try client.send(multipart: [Data(), Data("ping".utf8)])
        guard let served = try serveOne(within: milliseconds) else { return nil }
        try client.setReceiveTimeout(milliseconds: 2000)
        let reply = try client.receiveMultipart()?.last
        return (zap?.resolve(served.userId), served.userId, reply)
    }
}
