import CZeroMQ

/// A CURVE key pair, Z85 text (40 characters each).
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: String
    public let secretKey: String

    /// A fresh pair from libzmq (`zmq_curve_keypair`, libsodium's random source).
    public static func generate() throws -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41), secretKey = [CChar](repeating: 0, count: 41)
        try check(zmq_curve_keypair(&publicKey, &secretKey))
        return CurveKeyPair(publicKey: text(publicKey), secretKey: text(secretKey))
    }

    /// The public key that belongs to a Z85 secret key (`zmq_curve_public`); nil for a malformed one.
    public static func publicKey(forSecretKey secretKey: String) -> String? {
        guard Z85.decode(secretKey)?.count == 32 else { return nil }
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secretKey) == 0 else { return nil }
        return text(publicKey)
    }
}

/// ZeroMQ's Z85 text encoding (RFC 32): 4 bytes become 5 printable characters.
public enum Z85 {
    /// nil unless the byte count is a multiple of 4.
    public static func encode(_ bytes: [UInt8]) -> String? {
        guard bytes.count % 4 == 0 else { return nil }
        var text = [CChar](repeating: 0, count: bytes.count / 4 * 5 + 1)
        guard zmq_z85_encode(&text, bytes, bytes.count) != nil else { return nil }
        return ZeroMQ.text(text)
    }

    /// nil unless the length is a multiple of 5 and every character is in the Z85 alphabet.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        // libzmq checks the length but not every character: a stray one would decode to garbage.
        guard chars.count % 5 == 0, chars.allSatisfy({ alphabet.contains($0) }) else { return nil }
        var bytes = [UInt8](repeating: 0, count: chars.count / 5 * 4)
        guard zmq_z85_decode(&bytes, text) != nil else { return nil }
        return bytes
    }

    private static let alphabet = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)
}
