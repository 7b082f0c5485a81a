import Foundation

/// What `Forwarding.requestFrame` needs of a body that is one well-formed JSON value (checked by
/// `JSONSyntax.isValue` first): whether it is an object, where its brace is, whether it has members
/// and whether one is named `userId`. One pass over the bytes instead of a parse into Foundation objects.
struct TopLevelObject {
    /// The index of the opening `{` in the body.
    let brace: Data.Index
    let isEmpty: Bool
    /// A member named `userId` (whatever its value, null too) is there.
    let namesUser: Bool

    /// Nil when `body` is not an object. `body` must be well-formed JSON: strings are taken to end.
    init?(_ body: Data) {
        guard let found = body.withUnsafeBytes({ Self.scan($0.bindMemory(to: UInt8.self)) }) else { return nil }
        brace = body.startIndex + found.brace
        isEmpty = found.isEmpty
        namesUser = found.namesUser
    }

    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (brace: Int, isEmpty: Bool, namesUser: Bool)? {
        var index = 0
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        let brace = index
        var depth = 0, keyNext = false, isEmpty = true, namesUser = false
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                let start = index + 1
                var escaped = false
                index += 1
                while bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") { escaped = true; index += 1 }
                    index += 1
                }
                if depth == 1 && keyNext {
                    isEmpty = false
                    keyNext = false
                    namesUser = namesUser || isUserID(UnsafeBufferPointer(rebasing: bytes[start..<index]), escaped: escaped)
                }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                keyNext = depth == 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
            case UInt8(ascii: ","):
                keyNext = depth == 1
            default:
                break
            }
            index += 1
        }
        return (brace, isEmpty, namesUser)
    }

    /// Whether a key's bytes (between its quotes) name `userId`; a key written with escapes is unescaped first.
    private static func isUserID(_ key: UnsafeBufferPointer<UInt8>, escaped: Bool) -> Bool {
        guard escaped else { return key.elementsEqual("userId".utf8) }
        let quoted = Data([UInt8(ascii: "\"")] + Array(key) + [UInt8(ascii: "\"")])
        return (try? JSONDecoder().decode(String.self, from: quoted)) == "userId"
    }
}
