import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import LHTSecurity

/// How lht finds its CurveZMQ keys (PROTOCOL "Security"), part of every command's connection options:
///
/// - `--cert FILE` (LHT_CERT): a client's secret certificate `NAME.key_secret` (`lht keys add-user`);
/// - `--keys DIR` (LHT_KEYS): a key directory (`lht keys init`); without `--cert` lht acts as its admin
///   (`DIR/admin.key_secret`, which `KeyDirectory.create` writes);
/// - `--server-keys DIR` (LHT_SERVER_KEYS): where the services' public keys `<executable>.key` are.
///   Default: `--keys DIR`, else the directory of the `--cert` file. In a directory lht looks for
///   `services/<executable>.key` first, then `<executable>.key`.
///
/// None of them: plaintext, as for services started without `--keys`.
struct KeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Key directory of a deployment with keys (env LHT_KEYS): lht speaks CurveZMQ as its admin (DIR/admin.key_secret), or with --cert.",
        valueName: "dir"))
    var keys: String?

    @Option(help: ArgumentHelp(
        "Your secret certificate NAME.key_secret from `lht keys add-user` (env LHT_CERT): act as that user.", valueName: "file"))
    var cert: String?

    @Option(name: .customLong("server-keys"), help: ArgumentHelp(
        "Directory with the services' public keys <executable>.key, or a key directory (env LHT_SERVER_KEYS; default: --keys DIR, else the --cert file's directory).",
        valueName: "dir"))
    var serverKeys: String?

    init() {}

    private static func given(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        guard let value = environment[variable], !value.isEmpty else { return nil }
        return value
    }

    var keysDirectory: String? { Self.given(keys, "LHT_KEYS") }
    var certFile: String? { Self.given(cert, "LHT_CERT") }
    var serverKeysDirectory: String? {
        Self.given(serverKeys, "LHT_SERVER_KEYS") ?? keysDirectory ?? certFile.map { ($0 as NSString).deletingLastPathComponent }.map { $0.isEmpty ? "." : $0 }
    }

    /// The keys to talk with, loaded now; nil when none are given (plaintext). A certificate that
    /// cannot be used (missing, malformed, readable by others) is a usage error, status 2.
    func load() throws(Failure) -> ClientKeys? {
        let certificate: Certificate
        if let file = certFile {
            do {
                certificate = try Certificate.loadSecret(file)
            } catch {
                throw Failure(status: Status.usage, line: "error: --cert: \(error)")
            }
        } else if let directory = keysDirectory {
            do {
                certificate = try KeyDirectory(directory).adminCertificate()
            } catch {
                throw Failure(status: Status.usage, line: "error: --keys: \(error) (a user gives --cert FILE)")
            }
        } else {
            if Self.given(serverKeys, "LHT_SERVER_KEYS") != nil {
                throw Failure(status: Status.usage, line: "error: --server-keys needs --cert FILE or --keys DIR: whose keys to talk with")
            }
            return nil
        }
        return ClientKeys(certificate: certificate, serverKeys: serverKeysDirectory ?? ".")
    }
}

/// A client's own certificate and where the services' public keys are.
struct ClientKeys {
    let certificate: Certificate
    let serverKeys: String

    /// Own pair plus `service`'s public key, for a `ServiceClient` or `Subscription` to `service`.
    func credentials(for service: ServiceName) throws(Failure) -> CurveCredentials {
        let candidates = ["\(serverKeys)/services/\(service.rawValue).key", "\(serverKeys)/\(service.rawValue).key"]
        guard let path = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw Failure(status: Status.usage, line: "error: no public key of \(service.rawValue) in \(serverKeys) "
                + "(looked for services/\(service.rawValue).key and \(service.rawValue).key); give --server-keys DIR")
        }
        do {
            let serverKey = try Certificate.loadPublic(path).publicKey
            return CurveCredentials(publicKey: certificate.publicKey, secretKey: certificate.secretKey ?? "", serverKey: serverKey)
        } catch {
            throw Failure(status: Status.usage, line: "error: \(error)")
        }
    }
}
