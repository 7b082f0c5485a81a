import Foundation
import Testing
@testable import LHTSchema

// Shared helpers for the LHTSchema tests: frames and the request pipeline as a service runs it.
// The seeded PRNG for the fuzz tests, SplitMix64, is in TestSupport.

/// UTF-8 bytes of a JSON text.
func frame(_ json: String) -> Data { Data(json.utf8) }

/// A request frame `{"v":1,"op":<op>,"data":<data>}` with `data` given as JSON text.
func wireRequest(_ op: String, _ data: String) -> Data {
    frame(#"{"v":1,"op":"\#(op)","data":\#(data)}"#)
}

/// What a service does with a frame: read the head, then the op's payload.
func pipeline<Payload: Decodable>(_ type: Payload.Type, _ frame: Data) -> Result<Payload, WireError> {
    do {
        let head = try RequestHead(frame: frame)
        return .success(try decodeRequestData(Payload.self, from: frame, head: head))
    } catch {
        return .failure(error)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The head alone.
func headResult(_ frame: Data) -> Result<RequestHead, WireError> {
    do { return .success(try RequestHead(frame: frame)) } catch { return .failure(error) }
}

/// Decodes `frame` as a request for `Payload` and expects `invalid_argument` naming exactly `field`.
func expectInvalid<Payload: Decodable>(
    _ type: Payload.Type, _ frame: Data, field: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    switch pipeline(Payload.self, frame) {
    case .success(let value):
        Issue.record("accepted \(printable(frame)) as \(value); expected invalid_argument at \(field)", sourceLocation: sourceLocation)
    case .failure(let error):
        #expect(error.code == .invalidArgument, "\(error) for \(printable(frame))", sourceLocation: sourceLocation)
        #expect(error.field == field, "\(error) for \(printable(frame))", sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
    }
}

/// Expects the frame to be refused before the payload is read, with `code` (and `field`, when given).
func expectHeadError(
    _ frame: Data, _ code: ErrorCode, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    // Run the whole pipeline with a payload that has no required fields, so that a frame the head lets
    // through still shows what a service would answer.
    switch pipeline(NoFields.self, frame) {
    case .success:
        Issue.record("accepted \(printable(frame)); expected \(code.rawValue)", sourceLocation: sourceLocation)
    case .failure(let error):
        #expect(error.code == code, "\(error) for \(printable(frame))", sourceLocation: sourceLocation)
        if let field {
            #expect(error.field == field, "\(error) for \(printable(frame))", sourceLocation: sourceLocation)
        }
    }
}

/// A short, printable rendering of a frame for failure messages.
func printable(_ frame: Data, limit: Int = 160) -> String {
    var text = ""
    for byte in frame.prefix(limit) {
        if byte >= 0x20, byte < 0x7f, byte != UInt8(ascii: "\\") {
            text.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            text += "\\x" + String(byte, radix: 16, uppercase: false).leftPadded(to: 2)
        }
    }
    return frame.count > limit ? "\(text)… (\(frame.count) bytes)" : text
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}

/// Decodes with a plain `JSONDecoder`, encodes with `WireJSON.encode`, decodes again.
/// Returns the first value, the wire bytes, and the second value.
func wireRoundTrip<Value: Codable>(_ type: Value.Type, _ json: String) throws -> (first: Value, bytes: Data, second: Value) {
    let first = try JSONDecoder().decode(Value.self, from: frame(json))
    let bytes = try WireJSON.encode(first)
    let second = try JSONDecoder().decode(Value.self, from: bytes)
    return (first, bytes, second)
}

/// Round trip for values without `Equatable`: the second encoding must be byte-identical to the first.
@discardableResult
func expectStableRoundTrip<Value: Codable>(
    _ type: Value.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
) throws -> (value: Value, wire: String) {
    let (first, bytes, second) = try wireRoundTrip(Value.self, json)
    let again = try WireJSON.encode(second)
    #expect(again == bytes, "\(String(decoding: bytes, as: UTF8.self)) vs \(String(decoding: again, as: UTF8.self))", sourceLocation: sourceLocation)
    return (first, String(decoding: bytes, as: UTF8.self))
}

/// Round trip for `Equatable` values: decode, encode, decode again, equal; the encoding is stable too.
@discardableResult
func expectEqualRoundTrip<Value: Codable & Equatable>(
    _ type: Value.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
) throws -> (value: Value, wire: String) {
    let (first, bytes, second) = try wireRoundTrip(Value.self, json)
    #expect(first == second, sourceLocation: sourceLocation)
    let again = try WireJSON.encode(second)
    #expect(again == bytes, sourceLocation: sourceLocation)
    return (first, String(decoding: bytes, as: UTF8.self))
}

/// The wire text parsed back into a generic JSON value: for checking single fields of an encoding, and
/// for comparing encodings whose key order is not part of the contract.
func jsonObject(_ wire: String) throws -> JSONValue {
    try JSONDecoder().decode(JSONValue.self, from: frame(wire))
}
