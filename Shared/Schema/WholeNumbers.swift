import Foundation

extension KeyedDecodingContainer {
    /// JSONDecoder reports a number that does not fit the type (1.5 or 1e20 for an Int) with an
    /// error that has no coding path; this names the key instead.
    public func decodeWholeNumberIfPresent<Number: Decodable & FixedWidthInteger>(_ type: Number.Type, forKey key: Key) throws -> Number? {
        do {
            return try decodeIfPresent(type, forKey: key)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(key.stringValue) must be a whole number in range")
            }
            throw error
        } catch {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "\(key.stringValue) must be a whole number in range")
        }
    }

    public func decodeWholeNumber<Number: Decodable & FixedWidthInteger>(_ type: Number.Type, forKey key: Key) throws -> Number {
        guard let value = try decodeWholeNumberIfPresent(type, forKey: key) else {
            throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "\(key.stringValue) is required"))
        }
        return value
    }
}
