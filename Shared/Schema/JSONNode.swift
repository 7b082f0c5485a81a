import Foundation

/// A value of a parsed document, by its token.
///
/// Two words, unretained: a decoder or container is passed as an existential, which holds up to
/// three words in place and allocates a box for anything larger (one per value decoded), and the
/// document outlives every decoder of it (`leanDecode`).
struct JSONNode {
    unowned(unsafe) let document: JSONDocument
    let index: Int

    var token: JSONToken { document.tokens[index] }

    /// The members of an object, or the items of an array, in order: for an object, each member's
    /// key (`index`) followed by its value (`index + 1`).
    func children() -> ChildSequence {
        ChildSequence(document: document, first: index + 1, count: Int(token.count), step: token.kind == .object ? 2 : 1)
    }

    struct ChildSequence: Sequence, IteratorProtocol {
        unowned(unsafe) let document: JSONDocument
        private var following: Int
        private var remaining: Int
        /// Where in a child the token is whose `end` is the next child, plus one: 2 for a member
        /// (its key, then its value), 1 for an item.
        private let step: Int

        init(document: JSONDocument, first: Int, count: Int, step: Int) {
            self.document = document
            following = first
            remaining = count
            self.step = step
        }

        /// The index of the next member's key, or the next item.
        mutating func next() -> Int? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let current = following
            // Past the key (a single token) and the value's tokens.
            following = Int(document.tokens[current + step - 1].end)
            return current
        }
    }

    func string() throws -> String {
        let token = token
        guard token.kind == .string else { throw NotLean() }
        return String(decoding: document.text(token), as: UTF8.self)
    }

    func integer() throws -> Int64 {
        let token = token
        guard token.kind == .integer, let value = JSONDocument.integer(document.text(token)) else { throw NotLean() }
        return value
    }

    var isNull: Bool { token.kind == .null }

    /// The string as the `WireString` it names, as its `init(from:)` reads it.
    func wireString<Value: WireString>() throws -> Value {
        guard let value = Value(wireText: try string()) else { throw NotLean() }
        return value
    }

    /// An object's member of that name, the first if there are several; nil when there is none.
    func member(named name: String) -> JSONNode? {
        func search(_ name: UnsafeBufferPointer<UInt8>) -> JSONNode? {
            for keyIndex in children() {
                let key = document.tokens[keyIndex]
                if Int(key.count) == name.count,
                   name.isEmpty || memcmp(document.bytes.baseAddress! + Int(key.start), name.baseAddress!, name.count) == 0 {
                    return JSONNode(document: document, index: keyIndex + 1)
                }
            }
            return nil
        }
        return name.utf8.withContiguousStorageIfAvailable(search) ?? Array(name.utf8).withUnsafeBufferPointer(search)
    }

    /// What `parse` makes of the string's bytes.
    func parsed<Value>(_ parse: (UnsafeBufferPointer<UInt8>) -> Value?) throws -> Value {
        let token = token
        guard token.kind == .string, let value = parse(document.text(token)) else { throw NotLean() }
        return value
    }
}
