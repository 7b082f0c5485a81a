import CPrefetch
import LHTSchema
import ReminderPlanning

/// The planner's reminders in memory, compact, with their users' settings: a million of them are
/// loaded at start-up, and a `Reminder` in a dictionary (strings, a weekday array of its own,
/// padding) cost about 250 bytes each.
///
/// A row is 40 bytes: the id, the creation instant, the user as an index into the interned user
/// ids, and the rule's small fields. Titles and bodies, which few reminders have, are kept apart.
/// `Reminder` values are rebuilt on lookup. A user's settings are kept by the same index, so the
/// reminder in a row gives its user's without hashing the user id (docs/decisions/0016-planner-deciding-loop.md),
/// and so are the user's latest session ends (`LatestLogged`), for users with reminders or without.
struct ReminderTable {
    private struct Row {
        let id: RecordID
        let createdAt: Int64
        let user: Int32
        let minutes: Int16
        let lookbackHours: Int16
        let weekdays: UInt8
        let activity: Activity
        let enabled: Bool
    }

    private var rows: [Row] = []
    private var rowByID: [RecordID: Int32] = [:]
    /// Rows of removed reminders, reused before the array grows.
    private var freeRows: [Int32] = []
    private var texts: [RecordID: (title: String?, body: String?)] = [:]
    private var userIDs: [UserID] = []
    private var userIndex: [UserID: Int32] = [:]
    private var rowsByUser: [[Int32]] = []
    /// By user index: nil for a user who never set any.
    private var userSettings: [UserSettings?] = []
    /// By user index: a user the table never met has no session stored (loading meets every one who has).
    private var latestLogged: [LatestLogged] = []

    var count: Int { rowByID.count }

    mutating func reserveCapacity(_ count: Int) {
        rows.reserveCapacity(count)
        rowByID.reserveCapacity(count)
    }

    subscript(id: RecordID) -> Reminder? {
        rowByID[id].map { reminder(at: $0) }
    }

    /// The reminder in `row`, which must hold one (the scheduler's rows do): no lookup by id.
    subscript(row row: Scheduler.Row) -> Reminder { reminder(at: row) }

    /// For the deciding loop: the reminder in `row` (which must hold one) with its user's settings and
    /// latest session ends, prefetching what the next two decisions read: `after`'s row, and the user of `next`, whose
    /// row the call before prefetched. Mutating only so that the planner lends the table to the call:
    /// a call that does not mutate got a copy (a retain and a release of each of its arrays).
    mutating func deciding(_ row: Scheduler.Row, next: Scheduler.Row?, after: Scheduler.Row?)
        -> (reminder: Reminder, settings: UserSettings?, latest: LatestLogged) {
        rows.withUnsafeBufferPointer { rows in
            if let after { lht_prefetch(rows.baseAddress! + Int(after)) }
            if let next {
                let user = Int(rows[Int(next)].user)
                userSettings.withUnsafeBufferPointer { lht_prefetch($0.baseAddress! + user) }
                userIDs.withUnsafeBufferPointer { lht_prefetch($0.baseAddress! + user) }
                latestLogged.withUnsafeBufferPointer { lht_prefetch($0.baseAddress! + user) }
            }
        }
        let user = Int(rows[Int(row)].user)
        return (reminder(at: row), userSettings[user], latestLogged[user])
    }

    /// `user`'s reminders.
    func owned(by user: UserID) -> [Reminder] { rows(ownedBy: user).map(\.reminder) }

    /// The settings `user` set; nil if it never did.
    func settings(of user: UserID) -> UserSettings? { userIndex[user].flatMap { userSettings[Int($0)] } }

    /// `user`'s latest session ends.
    func latestLogged(by user: UserID) -> LatestLogged { userIndex[user].map { latestLogged[Int($0)] } ?? LatestLogged() }

    /// Raises `user`'s latest session ends.
    mutating func noteLogged(by user: UserID, _ update: (inout LatestLogged) -> Void) { update(&latestLogged[Int(intern(user))]) }

    /// Makes `settings` the user's (nil: as if never set).
    mutating func setSettings(_ settings: UserSettings?, of user: UserID) {
        if settings == nil && userIndex[user] == nil { return }
        userSettings[Int(intern(user))] = settings
    }

    /// Adds `reminder`, whose id is not in the table (the planner removes a reminder it replaces
    /// first: a replaced reminder gets its row back, since the row freed last is taken first); returns its row.
    @discardableResult
    mutating func insert(_ reminder: Reminder) -> Scheduler.Row {
        insert(Fields(id: reminder.id, userId: reminder.userId, rule: StoredRule(reminder), createdAt: reminder.createdAt.millisecondsSince1970),
               title: reminder.title, body: reminder.body)
    }

    /// A reminder's fields as stored, for loading without building a `Reminder` each.
    struct Fields: Sendable {
        let id: RecordID
        let userId: UserID
        let rule: StoredRule
        let createdAt: Int64
    }

    /// Adds a reminder whose id is not in the table yet; returns its row. An empty table gives the
    /// n-th reminder added row n, which loading relies on to schedule reminders as they are read.
    @discardableResult
    mutating func insert(_ fields: Fields, title: String?, body: String?) -> Scheduler.Row {
        assert(rowByID[fields.id] == nil, "insert takes a reminder whose id is not in the table")
        let user = intern(fields.userId)
        let rule = fields.rule
        let row = Row(id: fields.id, createdAt: fields.createdAt, user: user, minutes: Int16(rule.time.minutesSinceMidnight),
                      lookbackHours: Int16(clamping: rule.lookbackHours), weekdays: rule.weekdays.bits, activity: rule.activity, enabled: rule.enabled)
        let index: Int32
        if let free = freeRows.popLast() {
            index = free
            rows[Int(index)] = row
        } else {
            index = Int32(rows.count)
            rows.append(row)
        }
        rowByID[fields.id] = index
        rowsByUser[Int(user)].append(index)
        if title != nil || body != nil { texts[fields.id] = (title, body) }
        return index
    }

    /// `user`'s reminders with their rows.
    func rows(ownedBy user: UserID) -> [(row: Scheduler.Row, reminder: Reminder)] {
        guard let index = userIndex[user] else { return [] }
        return rowsByUser[Int(index)].map { ($0, reminder(at: $0)) }
    }

    /// Every user with reminders.
    var owners: [UserID] { zip(userIDs, rowsByUser).compactMap { $1.isEmpty ? nil : $0 } }

    /// Every user with settings or reminders.
    var users: [UserID] { userIDs.indices.compactMap { rowsByUser[$0].isEmpty && userSettings[$0] == nil ? nil : userIDs[$0] } }

    /// Every reminder's scheduling rule, row and creation instant, user by user, without building `Reminder`s.
    func forEachUser(_ body: (UserID, _ rules: [(rule: Scheduler.Rule, row: Scheduler.Row, createdAt: Instant)]) -> Void) {
        for (user, indices) in rowsByUser.enumerated() where !indices.isEmpty {
            body(userIDs[user], indices.map { index in
                let row = rows[Int(index)]
                return (Scheduler.Rule(id: row.id, time: LocalTime(hour: Int(row.minutes) / 60, minute: Int(row.minutes) % 60)!,
                                       weekdays: WeekdayMask(bits: row.weekdays), enabled: row.enabled),
                        index, Instant(millisecondsSince1970: row.createdAt))
            })
        }
    }

    /// Removes reminder `id` and returns the row it had, which the next insert takes.
    @discardableResult
    mutating func remove(_ id: RecordID) -> Scheduler.Row? {
        guard let index = rowByID.removeValue(forKey: id) else { return nil }
        rowsByUser[Int(rows[Int(index)].user)].removeAll { $0 == index }
        texts.removeValue(forKey: id)
        freeRows.append(index)
        return index
    }

    private func reminder(at index: Int32) -> Reminder {
        let row = rows[Int(index)]
        let text = texts.isEmpty ? nil : texts[row.id]
        return Reminder(id: row.id, userId: userIDs[Int(row.user)], activity: row.activity,
                        time: LocalTime(hour: Int(row.minutes) / 60, minute: Int(row.minutes) % 60)!,
                        weekdays: Self.weekdayLists[Int(row.weekdays)], lookbackHours: Int(row.lookbackHours), enabled: row.enabled,
                        title: text?.title, body: text?.body, createdAt: Instant(millisecondsSince1970: row.createdAt))
    }

    private mutating func intern(_ user: UserID) -> Int32 {
        // Loading meets a user's reminders one after another: the last one saves a hash lookup each.
        if let last = userIDs.last, last == user { return Int32(userIDs.count - 1) }
        if let index = userIndex[user] { return index }
        let index = Int32(userIDs.count)
        userIDs.append(user)
        userIndex[user] = index
        rowsByUser.append([])
        userSettings.append(nil)
        latestLogged.append(LatestLogged())
        return index
    }

    /// Every weekday selection as the list `Reminder` holds, built once.
    private static let weekdayLists: [[Weekday]] = (0..<128).map { bits in Weekday.allCases.filter { bits & (1 << $0.index) != 0 } }
}
