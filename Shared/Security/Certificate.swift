import Foundation
import ZeroMQ

/// A CurveZMQ certificate in the text format of czmq's `zcert` and pyzmq's `zmq.auth`:
/// `NAME.key` holds the public key, `NAME.key_secret` the public and the secret key (Z85), each
/// with an optional `metadata` section (`user-id = "alice"`, `role = "admin"`; quoted or not).
public struct Certificate: Sendable, Equatable {
    public let publicKey: String
    /// nil for a certificate read from a public (`.key`) file.
    public let secretKey: String?
    public var metadata: [String: String]

    public init(publicKey: String, secretKey: String? = nil, metadata: [String: String] = [:]) {
        self.publicKey = publicKey
        self.secretKey = secretKey
        self.metadata = metadata
    }

    /// A fresh key pair.
    public static func generate(metadata: [String: String] = [:]) throws -> Certificate {
        let pair = try CurveKeyPair.generate()
        return Certificate(publicKey: pair.publicKey, secretKey: pair.secretKey, metadata: metadata)
    }

    /// The public half only, for handing out or for `clients/`.
    public var publicOnly: Certificate { Certificate(publicKey: publicKey, metadata: metadata) }

    /// The first 8 Z85 characters: enough to tell keys apart in a log line, too little to be one.
    public var fingerprint: String { Certificate.fingerprint(publicKey) }
    public static func fingerprint(_ publicKey: String) -> String { String(publicKey.prefix(8)) }

    // MARK: Reading

    /// Reads a public `.key` file (a secret key in it is ignored).
    public static func loadPublic(_ path: String) throws -> Certificate {
        let certificate = try parse(readText(path), path: path)
        return certificate.publicOnly
    }

    /// Reads a `.key_secret` file. Refuses one that group or others have any access to: a key
    /// others could read is no longer secret (the same rule as ssh).
    public static func loadSecret(_ path: String) throws -> Certificate {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CertificateError.unreadable(path: path, reason: errnoText()) }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 { throw CertificateError.tooOpen(path: path, mode: mode) }
        let certificate = try parse(readText(path), path: path)
        guard let secret = certificate.secretKey else { throw CertificateError.malformed(path: path, reason: "no secret-key") }
        // A pair that does not belong together would fail every handshake with no hint why.
        guard CurveKeyPair.publicKey(forSecretKey: secret) == certificate.publicKey else {
            throw CertificateError.malformed(path: path, reason: "secret-key does not belong to public-key")
        }
        return certificate
    }

    /// Parses the ZPL subset these files use: top-level section names, indented `name = value`.
    static func parse(_ text: String, path: String) throws -> Certificate {
        var section = ""
        var curve: [String: String] = [:], metadata: [String: String] = [:]
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard raw.first == " " || raw.first == "\t" else {
                section = line
                continue
            }
            // Split at the first "=" only: Z85 itself contains "=" (and "#", so no trailing comments).
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = unquote(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
            switch section {
            case "curve": curve[name] = value
            case "metadata": metadata[name] = value
            default: break
            }
        }
        guard let publicKey = curve["public-key"] else { throw CertificateError.malformed(path: path, reason: "no public-key") }
        guard Z85.decode(publicKey)?.count == 32 else { throw CertificateError.malformed(path: path, reason: "public-key is not 40 Z85 characters") }
        if let secret = curve["secret-key"], Z85.decode(secret)?.count != 32 {
            throw CertificateError.malformed(path: path, reason: "secret-key is not 40 Z85 characters")
        }
        return Certificate(publicKey: publicKey, secretKey: curve["secret-key"], metadata: metadata)
    }

    private static func unquote(_ value: String) -> String {
        for quote in ["\"", "'"] where value.count >= 2 && value.hasPrefix(quote) && value.hasSuffix(quote) {
            return String(value.dropFirst().dropLast())
        }
        return value
    }

    private static func readText(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CertificateError.unreadable(path: path, reason: FileManager.default.fileExists(atPath: path) ? "not readable" : "no such file")
        }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Writing

    /// The file text, czmq style: values quoted, metadata sorted by name.
    public func text(includingSecret: Bool) throws -> String {
        var lines = [
            "#   ****  Generated by LeanHealthTimer  ****",
            includingSecret
                ? "#   ZeroMQ CURVE **Secret** Certificate\n#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions."
                : "#   ZeroMQ CURVE Public Certificate\n#   Exchange securely, or use a secure mechanism to verify the contents\n#   of this file after exchange.",
            "",
            "metadata",
        ]
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
            // Anything else could not be read back as the same name and value.
            guard !name.isEmpty, !name.contains(where: { $0 == "=" || $0.isWhitespace || $0 == "#" }),
                  !value.contains(where: { $0 == "\"" || $0.isNewline }) else {
                throw CertificateError.invalidMetadata(name: name, value: value)
            }
            lines.append("    \(name) = \"\(value)\"")
        }
        lines.append("curve")
        lines.append("    public-key = \"\(publicKey)\"")
        if includingSecret {
            guard let secretKey else { throw CertificateError.noSecretKey }
            lines.append("    secret-key = \"\(secretKey)\"")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes `NAME.key` (public) and, when this certificate has its secret, `NAME.key_secret`,
    /// both 0600 whatever the umask. `basePath` is `DIR/NAME`.
    public func write(basePath: String) throws {
        try writePrivately(text(includingSecret: false), to: basePath + ".key")
        if secretKey != nil { try writePrivately(text(includingSecret: true), to: basePath + ".key_secret") }
    }

    /// Writes only the public file, `path` in full (e.g. `clients/alice.key`).
    public func writePublic(to path: String) throws { try writePrivately(text(includingSecret: false), to: path) }
}

public enum CertificateError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case malformed(path: String, reason: String)
    case tooOpen(path: String, mode: mode_t)
    case invalidMetadata(name: String, value: String)
    case noSecretKey
    case writeFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read certificate \(path): \(reason)"
        case .malformed(let path, let reason): "not a certificate: \(path): \(reason)"
        case .tooOpen(let path, let mode):
            "secret key \(path) is accessible to group or others (mode \(String(mode, radix: 8))); run: chmod 600 \(path)"
        case .invalidMetadata(let name, let value): "metadata \(name) = \(value) cannot be written to a certificate"
        case .noSecretKey: "the certificate has no secret key"
        case .writeFailed(let path, let reason): "cannot write \(path): \(reason)"
        }
    }
}

/// Writes a file 0600 whatever the umask, through a temporary file and a rename, so a reader
/// (the ZAP handler re-reading clients/) never sees half a certificate.
func writePrivately(_ text: String, to path: String) throws {
    let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw CertificateError.writeFailed(path: path, reason: errnoText()) }
    var failure: String?
    // open's mode is masked by the umask; fchmod is not.
    if fchmod(fd, 0o600) != 0 { failure = errnoText() }
    let bytes = Array(text.utf8)
    if failure == nil, bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) != bytes.count { failure = errnoText() }
    if failure == nil, fsync(fd) != 0 { failure = errnoText() }
    close(fd)
    if failure == nil, rename(temporary, path) != 0 { failure = errnoText() }
    if let failure {
        unlink(temporary)
        throw CertificateError.writeFailed(path: path, reason: failure)
    }
}

func errnoText() -> String { String(cString: strerror(errno)) }
