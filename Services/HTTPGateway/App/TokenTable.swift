import Foundation
import LHTSchema
import LHTSecurity
import Logging

/// The tokens the gateway accepts now: `tokens/` re-read every second on a thread of its own, so
/// an added or revoked token counts within 5 s and no request reads files.
final class TokenTable: @unchecked Sendable {
    private let store: TokenStore
    private let lock = NSLock()
    private var entries: [TokenEntry] = []
    private var stopped = false
    /// Refusals logged per address, at most once a minute each.
    private var lastLogged: [String: Date] = [:]

    init(store: TokenStore) {
        self.store = store
        entries = store.entries()
        let thread = Thread { [weak self] in
            while let self, !self.isStopped {
                Thread.sleep(forTimeInterval: 1)
                let fresh = self.store.entries()
                self.lock.withLock { self.entries = fresh }
            }
        }
        thread.name = "token-table"
        thread.start()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    func stop() { lock.withLock { stopped = true } }

    /// The entry of the bearer token in an `Authorization` header value; nil for none or an unknown one.
    func entry(authorization: String?) -> TokenEntry? {
        guard let token = Self.bearer(authorization) else { return nil }
        return TokenEntry.matching(token, in: lock.withLock { entries })
    }

    /// The token of `Bearer <token>` (the scheme in any case, blanks around the token ignored).
    /// Read as UTF-8 bytes: it runs for every request.
    static func bearer(_ authorization: String?) -> String? {
        guard let bytes = authorization?.utf8, bytes.count > 7,
              bytes.prefix(7).elementsEqual("bearer ".utf8, by: { ((0x41...0x5A).contains($0) ? $0 | 0x20 : $0) == $1 }) else { return nil }
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        let token = bytes.dropFirst(7).drop(while: blank).reversed().drop(while: blank).reversed()
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }

    /// Whether a refusal from `address` should be logged now (never the token itself).
    func shouldLog(refusalFrom address: String, now: Date = Date()) -> Bool {
        lock.withLock {
            if let last = lastLogged[address], now.timeIntervalSince(last) < 60 { return false }
            if lastLogged.count > 10_000 { lastLogged = [:] }
            lastLogged[address] = now
            return true
        }
    }
}
