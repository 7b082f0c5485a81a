import Foundation

/// Free text on the wire (a session's `source`, a reminder's `title` and `body`, notification and
/// action ids): any Unicode except U+0000, which C strings, logs, terminals and other languages'
/// bindings cut the text at. Everything else — emoji, combining marks, U+2028, tabs — is kept
/// byte for byte.
public enum FreeText {
    /// Whether `text` may be stored and sent back as it is.
    public static func isAllowed(_ text: String) -> Bool { !text.utf8.contains(0) }
}

extension KeyedDecodingContainer {
    /// A required free-text field; U+0000 is `invalid_argument` naming the field.
    public func decodeText(forKey key: Key) throws -> String {
        let text = try decode(String.self, forKey: key)
        try checkText(text, forKey: key)
        return text
    }

    /// An optional free-text field; U+0000 is `invalid_argument` naming the field.
    public func decodeTextIfPresent(forKey key: Key) throws -> String? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        try checkText(text, forKey: key)
        return text
    }

    private func checkText(_ text: String, forKey key: Key) throws {
        guard FreeText.isAllowed(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(key.stringValue) must not contain U+0000")
        }
    }
}
