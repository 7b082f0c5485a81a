import Foundation
import LHTSchema
import ReminderPlanning
import ServiceHost
import Storage

// The ops the planner serves (PROTOCOL.md, `reminder.*`, `user.*`, `clock.*`) and their handlers.
extension ReminderPlanner {
    func registerOps() {
        // Writes change memory at once (undone if their transaction rolls back), so they share the
        // batch's transaction with every other request: group commit, one fsync per batch.
        host.handle(Ops.userPut) { [unowned self] input, tx in
            let user = UserSettings(userId: input.userId, timeZone: input.timeZone, locale: input.locale,
                                    paused: input.paused ?? self.user(input.userId).paused)
            try PlannerStore.save(user, tx.sql)
            for reminder in reminders.owned(by: user.userId) { try reevaluate(reminder, zone: user.timeZone, in: tx) }
            try persistDecidedThrough(tx)
            try replaceUser(user, in: tx)
            return user
        }
        host.handle(Ops.userGet) { [unowned self] query, _ in user(query.userId) }
        host.handleEncoded(Ops.reminderPut) { [unowned self] input, tx in try putReminder(input, tx) }
        // A reminder belongs to its user: the host answers another user's id as an unknown one.
        let ownerOfReminder = { [unowned self] (id: RecordID) in reminders[id]?.userId }
        host.handle(Ops.reminderGet, owner: { ownerOfReminder($0.id) }) { [unowned self] query, _ in try reminder(query.id, query) }
        host.handle(Ops.reminderList) { [unowned self] query, _ in
            let list = reminders.owned(by: query.userId).sorted { ($0.time, $0.id) < ($1.time, $1.id) }
            return ReminderListReply(reminders: list)
        }
        host.handle(Ops.reminderDelete, owner: { ownerOfReminder($0.id) }) { [unowned self] query, tx in
            let reminder = try reminder(query.id, query)
            try PlannerStore.delete(reminder, tx.sql)
            try forgetMovedDecidedDay(of: reminder.id, tx)
            let deleted = ReminderDeleted(id: reminder.id, userId: reminder.userId, activity: reminder.activity)
            try tx.append(Events.reminderChanged, userId: reminder.userId, activity: reminder.activity, data: .deleted(deleted))
            try persistDecidedThrough(tx)
            try replaceReminder(reminder.id, with: nil, in: tx)
            return deleted
        }
        host.handle(Ops.reminderUpcoming) { [unowned self] query, tx in try UpcomingReply(occurrences: upcoming(query, tx)) }
        host.handle(Ops.reminderRestore, owner: { ownerOfReminder($0.reminderId) }) { [unowned self] input, tx in
            try restore(input, tx)
        }
        host.handle(Ops.reminderTest, owner: { ownerOfReminder($0.reminderId) }) { [unowned self] input, tx in
            try fireTest(reminder(input.reminderId, input), tx)
        }
        host.handle(Ops.clockGet) { [unowned self] _, _ in ClockReply(now: host.time.now(), decided: nil) }
        // Sessions logged just before the move count: the clock moves after a catch-up (fail-safe if
        // the logger is silent), answered later so the loop serves meanwhile.
        host.handleDeferred(Ops.clockSet) { [unowned self] input, reply in
            try requireManualClock(Ops.clockSet.name)
            afterCatchingUp { [unowned self] in reply.answer { try moveClock(Ops.clockSet.name, to: input.now) } }
        }
        host.handleDeferred(Ops.clockAdvance) { [unowned self] input, reply in
            try requireManualClock(Ops.clockAdvance.name)
            afterCatchingUp { [unowned self] in
                reply.answer { try moveClock(Ops.clockAdvance.name, to: host.time.now().adding(seconds: input.seconds)) }
            }
        }
    }

    /// The reminder `request` names, or the catalog's reply for an unknown one.
    private func reminder(_ id: RecordID, _ request: RecordScoped) throws(WireError) -> Reminder {
        guard let reminder = reminders[id] else { throw request.notFound }
        return reminder
    }

    /// The reply's `data` encoded: without warnings it is the `reminder.changed` event's data.
    private func putReminder(_ input: ReminderPutRequest, _ tx: Transaction) throws -> Data {
        let existing = input.id.flatMap { reminders[$0] }
        if let existing, existing.userId != input.userId {
            throw WireError(.conflict, "reminder \(existing.id) belongs to another user", field: "data.userId")
        }
        let weekdays = input.weekdays ?? Weekday.allCases
        var warnings: [String]?
        if weekdays.isEmpty { warnings = ["weekdays is empty: the reminder is stored disabled"] }
        let reminder = Reminder(
            id: input.id ?? RecordID(), userId: input.userId, activity: input.activity,
            time: input.time ?? Reminder.defaultTime(for: input.activity), weekdays: weekdays,
            lookbackHours: input.lookbackHours ?? Reminder.defaultLookbackHours(for: input.activity),
            enabled: weekdays.isEmpty ? false : input.enabled ?? true, title: input.title, body: input.body,
            createdAt: existing?.createdAt ?? tx.now)
        try PlannerStore.save(reminder, tx.sql)
        if let existing, existing.time != reminder.time || WeekdayMask(existing.weekdays) != WeekdayMask(reminder.weekdays) {
            try forgetMovedDecidedDay(of: existing.id, tx)
        }
        let change = try WireJSON.encode(ReminderChange.put(reminder))
        try tx.append(Events.reminderChanged, userId: reminder.userId, activity: reminder.activity, encodedData: change)
        try reevaluate(reminder, isNew: existing == nil, zone: user(reminder.userId).timeZone, in: tx)
        try persistDecidedThrough(tx)
        try replaceReminder(reminder.id, with: reminder, in: tx)
        return warnings == nil ? change : try WireJSON.encode(ReminderPutReply(reminder: reminder, warnings: warnings))
    }

    private func restore(_ input: RestoreRequest, _ tx: Transaction) throws -> Occurrence {
        let reminder = try reminder(input.reminderId, input)
        let zone = user(reminder.userId).timeZone
        guard reminder.enabled, input.at >= reminder.createdAt,
              let planned = OccurrenceCalendar.occurrence(exactlyAt: input.at, time: reminder.time, on: reminder.weekdays, in: zone.rules)
        else { throw WireError(.notFound, "\(input.at) is not an occurrence of reminder \(reminder.id)", field: "data.at") }
        let decided = try decisions(of: reminder.id, from: planned.at, through: planned.at, tx)
        guard decided.isEmpty, planned.at >= firstPending(reminder) else {
            throw WireError(.conflict, "the occurrence at \(planned.at) is decided already", field: "data.at")
        }
        try PlannerStore.restore(reminder, at: planned.at, tx.sql)
        let occurrence = makeOccurrence(reminder, planned, status: .scheduled, cause: nil)
        try tx.append(Events.reminderRestored, userId: reminder.userId, activity: reminder.activity, data: occurrence)
        let key = OccurrenceKey(reminder: reminder.id, at: planned.at)
        try noteChanged(reminder.userId, tx)
        restored.insert(key)
        tx.onRollback { [unowned self] in restored.remove(key) }
        return occurrence
    }

    /// `reminder.test`: a `reminder.due` with `test:true` now, whatever the rule, coverage or pause.
    private func fireTest(_ reminder: Reminder, _ tx: Transaction) throws -> Occurrence {
        let settings = user(reminder.userId)
        let local = tx.now.local(in: settings.timeZone)
        let planned = PlannedOccurrence(day: local.day, weekday: local.day.weekday, at: tx.now,
                                        localTime: LocalTime(hour: local.minuteOfDay / 60, minute: local.minuteOfDay % 60)!)
        let occurrence = makeOccurrence(reminder, planned, status: .fired, cause: nil)
        try tx.append(Events.reminderDue, userId: reminder.userId, activity: reminder.activity,
                      data: DueOccurrence(occurrence: occurrence, timeZone: settings.timeZone, locale: settings.locale,
                                          title: reminder.title, body: reminder.body, late: false, test: true))
        return occurrence
    }

    private func requireManualClock(_ op: String) throws(WireError) {
        guard manualClock != nil else {
            throw WireError.invalid("op", "\(op) needs --clock manual:<instant>; this planner runs on the system clock")
        }
    }

    /// `clock.set`/`clock.advance`, once the caller has caught up with the session log: moves the
    /// manual clock to `target` in committed steps (`decideStep`), answering other requests between
    /// steps, and replies once for the whole move.
    private func moveClock(_ op: String, to target: Instant) throws -> ClockReply {
        guard let manualClock else {
            throw WireError.invalid("op", "\(op) needs --clock manual:<instant>; this planner runs on the system clock")
        }
        // Requests are served between the steps of a move: a second move would run inside the first.
        guard !movingClock else {
            throw WireError(.conflict, "a clock move is under way (the clock is at \(manualClock.current)); try again when it has replied", field: "op")
        }
        let previous = manualClock.current
        guard target >= previous else { throw WireError.invalid("data.now", "the clock only moves forward") }
        movingClock = true
        defer { movingClock = false }
        var reached = previous, decided = 0
        while true {
            let bound = min(target, reached.adding(seconds: Self.clockStepSeconds))
            // During the step the clock reads its bound (the decision events' time); after it, what it committed.
            manualClock.current = bound
            let step: ClockStep
            do {
                step = try decideStep(from: reached, through: bound)
            } catch {
                manualClock.current = reached
                recoverFromFailedDecisions(error)
                // A database away is a dependency down: `unavailable`, and the move may be asked again.
                if let reason = StoreUnavailable.reason(error) {
                    throw WireError(.unavailable, "\(reason): the clock stays at \(reached), the last step committed; repeat the request later")
                }
                throw WireError(.internal, "deciding up to \(bound) failed; the clock stays at \(reached), the last step committed")
            }
            manualClock.current = step.reached
            reached = step.reached
            decided += step.decided
            if step.finished && bound == target { break }
            do {
                try host.serveWaitingRequests()
            } catch {
                host.recordError("serving requests between clock steps failed", ["error": "\(error)"])
            }
        }
        return ClockReply(now: target, decided: decided)
    }
}
