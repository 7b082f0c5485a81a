import Foundation
import LHTSchema
import ServiceHost
import Storage
import StreakRules

/// One user's NoAlc days, latest entry per day, sorted by day, and the streak walked through them:
/// an entry in day order, or a `streak.get` as of the last logged day or later, costs no walk over
/// the history.
struct History {
    private(set) var entries: [(day: LocalDay, level: NoAlcLevel)] = []
    private var progress: StreakProgress
    /// The state as of the latest logged day, as last published: what a new entry is compared with.
    var latest: StreakState?

    init(policy: StreakPolicy) { progress = StreakProgress(policy: policy) }

    var lastDay: LocalDay? { entries.last?.day }

    /// Sets a day's level; entries mostly arrive in day order, so this is usually an append.
    mutating func record(_ level: NoAlcLevel, on day: LocalDay) {
        if let last = entries.last?.day, last < day {
            entries.append((day, level))
        } else {
            let index = firstIndex(notBefore: day)
            if index < entries.count, entries[index].day == day {
                entries[index].level = level
            } else {
                entries.insert((day, level), at: index)
            }
        }
        // An earlier day changes the walk from there on: walked again from the start.
        if !progress.record(level, on: day) { progress = StreakProgress(policy: progress.policy, sortedLevels: entries) }
    }

    /// The user's streak as of `day` (SEMANTICS §5).
    func streak(of user: UserID, asOf day: LocalDay) -> StreakState {
        progress.state(user: user, asOf: day)
            ?? Streak.compute(user: user, sortedLevels: entries, today: day, policy: progress.policy)
    }

    /// The levels logged within `days`.
    func levels(in days: ClosedRange<LocalDay>) -> [LocalDay: NoAlcLevel] {
        var levels: [LocalDay: NoAlcLevel] = [:]
        var index = firstIndex(notBefore: days.lowerBound)
        while index < entries.count, entries[index].day <= days.upperBound {
            levels[entries[index].day] = entries[index].level
            index += 1
        }
        return levels
    }

    private func firstIndex(notBefore day: LocalDay) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].day < day { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// Every user's history in memory, plus the changes of the transaction being applied.
///
/// Memory may change only once the transaction commits (`Transaction.afterCommit`), yet a batch of
/// upstream events in one transaction must see its own earlier entries; so they are staged here and
/// merged on commit. Staged changes of a transaction that never committed are dropped when the
/// next transaction asks.
final class Histories {
    private let policy: StreakPolicy
    private var committed: [UserID: History]
    private var staged: [UserID: History] = [:]
    private weak var stagedIn: Transaction?

    init(_ histories: [UserID: History], policy: StreakPolicy) {
        committed = histories
        self.policy = policy
    }

    /// The user's history as `tx` sees it.
    func history(of user: UserID, in tx: Transaction) -> History {
        if stagedIn === tx, let history = staged[user] { return history }
        return committedHistory(of: user)
    }

    /// The user's history as committed: what a request outside any transaction sees.
    func committedHistory(of user: UserID) -> History { committed[user] ?? History(policy: policy) }

    /// The users `taken` selects, as `stored` has them: the days their last owner stored, and as
    /// `latest` the state it published for them. Days kept in memory only are dropped: the events
    /// that bring them are applied again, one at a time, each publishing its change. Between transactions.
    func takeOver(from stored: [UserID: History], of taken: (UserID) -> Bool) {
        for user in Set(committed.keys).union(stored.keys) where taken(user) {
            committed[user] = stored[user].map { history in
                var history = history
                history.latest = history.lastDay.map { history.streak(of: user, asOf: $0) }
                return history
            }
        }
    }

    /// Must be the last step of a change: nothing after it may throw, or the savepoint it ran in
    /// would roll back while the staged history stays.
    func stage(_ history: History, for user: UserID, in tx: Transaction) {
        if stagedIn !== tx {
            staged = [:]
            stagedIn = tx
            tx.afterCommit { [unowned self] in
                committed.merge(staged) { $1 }
                staged = [:]
                stagedIn = nil
            }
        }
        staged[user] = history
    }
}

/// The streak service's table: the latest level per user and day, with the upstream seq that set it.
enum StreakStore {
    static let sqliteMigrations: [Migration] = [
        .sqlite("noalc_level", table + " WITHOUT ROWID"),
        // The cursor lives in the projection file now (`Projection.cursorsOnly`): read again once, changing nothing.
        .sqlite("cursor in the projection file", "DELETE FROM main.cursor"),
    ]

    static let layout = StoreLayout(sqlite: .tables(sqliteMigrations, projection: .cursorsOnly),
                                    postgresMigrations: [.postgres("noalc_level", [table])], partitioned: true)

    /// SQLite keeps it WITHOUT ROWID (the key is the row): one b-tree instead of two.
    private static let table = """
        CREATE TABLE noalc_level (
            user_id TEXT NOT NULL, day TEXT NOT NULL, level TEXT NOT NULL, seq BIGINT NOT NULL,
            PRIMARY KEY (user_id, day))
        """

    /// Stores a day's level unless a newer upstream entry already set it (latest by seq wins).
    /// False when nothing changed.
    static func record(user: UserID, day: LocalDay, level: NoAlcLevel, seq: Int64, in sql: StoreConnection) throws -> Bool {
        try sql.execute("""
            INSERT INTO noalc_level (user_id, day, level, seq) VALUES (?, ?, ?, ?)
            ON CONFLICT (user_id, day) DO UPDATE SET level = excluded.level, seq = excluded.seq WHERE excluded.seq > noalc_level.seq
            """, [.text(user.rawValue), .text(day.description), .text(level.rawValue), .integer(seq)]) > 0
    }

    /// The stored level of a user's day.
    static func level(user: UserID, day: LocalDay, in sql: StoreConnection) throws -> NoAlcLevel? {
        try sql.first("SELECT level FROM noalc_level WHERE user_id = ? AND day = ?", [.text(user.rawValue), .text(day.description)]) {
            $0.text(0).flatMap(NoAlcLevel.init(rawValue:))
        }
    }

    /// Every user's history, read once at start. A row that does not read back (a user id, day or
    /// level that does not parse, a value of the wrong type) is skipped, logged and counted in
    /// `health` (`unreadableRows`), once: the table is read only here.
    static func load(from sql: StoreConnection, policy: StreakPolicy, host: ServiceHost) throws -> [UserID: History] {
        var histories: [UserID: History] = [:]
        // Rows come grouped by user: one history is built at a time, without hashing per row.
        var current: (user: UserID, history: History)?
        host.count(unreadableRows, by: 0)
        try sql.forEachRow("SELECT user_id, day, level FROM noalc_level ORDER BY user_id, day", []) { row in
            let user = row.text(0), dayText = row.text(1), levelText = row.text(2)
            guard let userId = user.flatMap(UserID.init), let day = dayText.flatMap(LocalDay.init),
                  let level = levelText.flatMap(NoAlcLevel.init(rawValue:)) else {
                host.count(unreadableRows)
                host.logger.error("unreadable stored row skipped", metadata: [
                    "table": "noalc_level", "user_id": "\(user?.debugDescription.prefix(80) ?? "?")",
                    "day": "\(dayText?.debugDescription.prefix(40) ?? "?")", "level": "\(levelText?.debugDescription.prefix(40) ?? "?")",
                ])
                return
            }
            if current?.user != userId {
                if let (user, history) = current { histories[user] = history }
                current = (userId, histories[userId] ?? History(policy: policy))
            }
            current?.history.record(level, on: day)
        }
        if let (user, history) = current { histories[user] = history }
        return histories
    }

    /// The `health` counter of rows `load` skipped.
    static let unreadableRows = "unreadableRows"
}
