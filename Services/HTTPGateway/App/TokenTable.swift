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

    static func bearer(_ authorization: String?) -> String? {
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return nil }
        let token = authorization.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
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
