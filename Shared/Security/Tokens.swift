import Foundation
import LHTSchema

/// One bearer token of the HTTP gateway as its file `tokens/<label>.token` holds it: never the
/// token itself, only its SHA-256 (PROTOCOL "HTTP gateway", Tokens).
public struct TokenEntry: Sendable, Equatable {
    public let label: String
    public let userId: UserID
    /// The token's SHA-256, 32 bytes.
    public let hash: [UInt8]
    public let created: String
}

public enum TokenError: Error, Equatable, CustomStringConvertible {
    case labelExists(String)
    case noSuchToken(String)

    public var description: String {
        switch self {
        case .labelExists(let label): "a token labelled \(label) exists already (revoke it first, or give another --label)"
        case .noSuchToken(let label): "no token labelled \(label)"
        }
    }
}

/// The `tokens/` directory of a key directory: 0700, each file 0600, written whole through a rename.
public struct TokenStore: Sendable {
    public static let prefix = "lht_"
    public let path: String

    public init(keys: KeyDirectory) { path = keys.path + "/tokens" }

    /// A new token: `lht_` and 43 base62 characters drawn uniformly from the kernel's random bytes
    /// (256 bits, as much as 32 random bytes).
    public static func generate() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return prefix + String((0..<43).map { _ in alphabet[Int.random(in: 0..<62, using: &generator)] })
    }

    /// Writes `tokens/<label>.token` for `userId` with a new token's hash and returns the token,
    /// which is never stored. The label defaults to the userId, then `<userId>-2`, `-3`, ….
    public func add(_ userId: UserID, label given: String? = nil, now: Date = Date()) throws -> (label: String, token: String) {
        try KeyDirectory.makePrivateDirectory(path)
        let label: String
        if let given {
            guard KeyDirectory.isValidName(given) else { throw KeyDirectoryError.invalidName(given) }
            guard !FileManager.default.fileExists(atPath: file(given)) else { throw TokenError.labelExists(given) }
            label = given
        } else {
            var candidate = userId.rawValue, number = 1
            while FileManager.default.fileExists(atPath: file(candidate)) {
                number += 1
                candidate = "\(userId)-\(number)"
            }
            label = candidate
        }
        let token = Self.generate()
        let created = ISO8601DateFormatter().string(from: now)
        try writePrivately("user-id = \"\(userId)\"\nsha256 = \"\(SHA256.hex(Array(token.utf8)))\"\ncreated = \"\(created)\"\n", to: file(label))
        return (label, token)
    }

    /// Every readable token file, by label; a malformed file is skipped (it lets nobody in).
    public func entries() -> [TokenEntry] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { $0.hasSuffix(".token") && !$0.hasPrefix(".") }
        return names.compactMap { name in
            guard let text = try? String(contentsOfFile: "\(path)/\(name)", encoding: .utf8) else { return nil }
            return Self.parse(text, label: String(name.dropLast(".token".count)))
        }.sorted { $0.label < $1.label }
    }

    public func revoke(_ label: String) throws {
        guard KeyDirectory.isValidName(label) else { throw KeyDirectoryError.invalidName(label) }
        guard unlink(file(label)) == 0 else {
            throw errno == ENOENT ? TokenError.noSuchToken(label) : KeyDirectoryError.io(path: file(label), reason: errnoText())
        }
    }

    private func file(_ label: String) -> String { "\(path)/\(label).token" }

    static func parse(_ text: String, label: String) -> TokenEntry? {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            fields[parts[0]] = parts[1].hasPrefix("\"") && parts[1].hasSuffix("\"") && parts[1].count >= 2 ? String(parts[1].dropFirst().dropLast()) : parts[1]
        }
        guard let user = fields["user-id"].flatMap(UserID.init), let hex = fields["sha256"], let hash = Self.bytes(hex: hex) else { return nil }
        return TokenEntry(label: label, userId: user, hash: hash, created: fields["created"] ?? "")
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}

extension TokenEntry {
    /// The entry whose hash is `token`'s, comparing every entry in constant time (no early exit,
    /// no short-circuit on the first differing byte), so timing tells nothing about stored hashes.
    public static func matching(_ token: String, in entries: [TokenEntry]) -> TokenEntry? {
        let presented = SHA256.digest(Array(token.utf8))
        var found: TokenEntry?
        for entry in entries {
            var difference: UInt8 = entry.hash.count == presented.count ? 0 : 1
            for (a, b) in zip(entry.hash, presented) { difference |= a ^ b }
            if difference == 0 { found = entry }
        }
        return found
    }
}
