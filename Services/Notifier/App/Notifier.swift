import Foundation
import LHTClient
import LHTSchema
import Logging
import NotificationRendering
import ServiceHost
import Storage
import ZeroMQ

/// Turns the planner's `reminder.due` into notifications (`notify.<userId>.<activity>`), and a tap
/// on a NoAlc quick action into an entry at the session logger (SEMANTICS §4, §2 target day).
///
/// Everything it decides is stored, written in the transaction that advances the planner
/// cursor: an occurrence is notified (or dropped by the rate limit) exactly once whatever restarts
/// or redelivery happen, and the rate limit survives restarts. Several instances share the users
/// by partitions: each notifies its own.
public final class NotifierService: Service {
    public let host: ServiceHost
    private let settings: NotifierSettings
    /// The session logger's api, called without holding the loop (quick actions answer later).
    private let sessionLogger: UpstreamClient
    private var feed: UpstreamFeed!

    /// Lazy Pirate against the session logger: tries × timeout bounds how long an action may wait.
    static let loggerTries = 3
    static let loggerTimeoutMilliseconds = 1000

    public init(settings: NotifierSettings, logger: Logger, context: Context? = nil) throws {
        self.settings = settings
        host = try ServiceHost(settings: settings.service, layout: NotifierStore.layout, logger: logger, context: context)
        sessionLogger = try UpstreamClient(host: host, upstream: .sessionLogger, endpoints: settings.sessionLoggerAPI)
        let counts = try host.query(NotifierStore.counts)
        host.count("notified", by: counts.notified)
        host.count("rateLimited", by: counts.rateLimited)
        for outcome in ["sent", "rate_limited"] { host.countMetric("notifications", "outcome", outcome, by: 0) }
        feed = try UpstreamFeed(upstream: .reminderPlanner, host: host, eventsEndpoints: settings.plannerEvents,
                                apiEndpoints: settings.plannerAPI, partitioned: true) { [unowned self] event, tx in
            try apply(event, tx)
        }
        registerOps()
        // Before the ready line; if the planner does not answer, the loop keeps trying.
        feed.catchUp(timeoutMilliseconds: 2000)
    }

    // MARK: Ops

    private func registerOps() {
        host.handleEncoded(Ops.notificationList) { query, tx in try NotifierStore.list(query, tx.sql) }
        // Waits on the session logger: answered later, so the loop serves everything else meanwhile.
        host.handleDeferred(Ops.notificationAction, owner: { [unowned self] input in
            try host.query { try NotifierStore.notification(input.notificationId, $0) }?.userId
        }) { [unowned self] input, reply in try act(input, reply) }
    }

    private func act(_ input: NotificationActionRequest, _ reply: DeferredReply<NotificationActionReply>) throws {
        guard let notification = try host.query({ try NotifierStore.notification(input.notificationId, $0) }) else {
            throw input.notFound
        }
        switch NotificationRenderer.resolve(actionId: input.actionId, in: notification) {
        case nil:
            let ids = notification.actions.map(\.id).joined(separator: ", ")
            throw WireError(.notFound, "notification \(notification.notificationId) offers no action \"\(input.actionId.prefix(60))\" (it offers \(ids))",
                            field: "data.actionId")
        case .open(let deepLink):
            reply.succeed(NotificationActionReply(deepLink: deepLink))
        case .logNoAlc(let level):
            try log(level, for: notification, actionId: input.actionId) { result in
                reply.answer { NotificationActionReply(entry: try result.get()) }
            }
        }
    }

    /// Logs `level` for the notification's target day; `then` gets the entry as the logger stored it.
    /// The idempotency id depends only on (notification, action): a retry after a lost ack, or the
    /// user tapping again, gets the first entry back (`duplicate:true`) instead of a second one.
    private func log(_ level: NoAlcLevel, for notification: LHTSchema.Notification, actionId: String,
                     then: @escaping (Result<StoredNoAlcEntry, WireError>) -> Void) throws {
        guard let day = notification.targetDay else {
            throw WireError(.internal, "notification \(notification.notificationId) has no target day to log for")
        }
        let request = NoAlcLogRequest(id: ActionKey.id(notificationId: notification.notificationId, actionId: actionId),
                                      userId: notification.userId, day: day, level: level, source: "notification")
        callSessionLogger(Ops.noalcLog, request) { [unowned self] logged in
            let receipt: LogReceipt
            switch logged {
            case .failure(let error): return then(.failure(error))
            case .success(let value): receipt = value
            }
            // The event the entry was published with is the stored entry, exactly (a later correction
            // of the same day does not hide it, as it would from noalc.list).
            callSessionLogger(Ops.eventsSince, EventsSinceRequest(after: receipt.seq - 1, limit: 1)) { fetched in
                then(fetched.flatMap { page in
                    guard case .noalcLogged(let entry) = page.events.first?.data, entry.id == receipt.id else {
                        return .failure(WireError(.internal, "the session logger's event \(receipt.seq) is not entry \(receipt.id)"))
                    }
                    return .success(entry)
                })
            }
        }
    }

    /// One request to the session logger, retried on timeout, without holding the loop; its refusals
    /// come back as ours, without its field path, which names its request, not the caller's.
    private func callSessionLogger<Request, Reply>(_ op: Op<Request, Reply>, _ request: Request,
                                                   then: @escaping (Result<Reply, WireError>) -> Void) {
        sessionLogger.call(op, request, timeoutMilliseconds: Self.loggerTimeoutMilliseconds, tries: Self.loggerTries) { [unowned self] result in
            then(result.mapError { error in
                if error.code == .unavailable {
                    host.logger.warning("session logger did not answer", metadata: ["op": "\(op.name)"])
                    return WireError(.unavailable, "the session logger did not answer \(op.name) within \(Self.loggerTries) × \(Self.loggerTimeoutMilliseconds) ms; repeating the action is safe")
                }
                return WireError(error.code, "the session logger refused \(op.name): \(error.message)")
            })
        }
    }

    // MARK: Upstream

    /// One planner event: a `reminder.due` becomes a notification, unless the rate limit drops it;
    /// with several instances, on the one that owns its user's partition (`UpstreamFeed.isMine`).
    private func apply(_ event: ReceivedEvent, _ tx: Transaction) throws {
        guard case .reminderDue(let due) = event.data, feed.isMine(due.occurrence.userId, seq: event.seq) else { return }
        let occurrence = due.occurrence
        // Each test firing is its own notification; the envelope id keeps a redelivered one the same.
        let notificationId = due.test ? "\(occurrence.reminderId)@test-\(event.id)" : occurrence.identity
        guard try !NotifierStore.isDecided(notificationId, tx.sql) else { return }

        if !due.test, let lastSent = try NotifierStore.lastSent(user: occurrence.userId, activity: occurrence.activity, tx.sql),
           !RateLimit.allows(occurrenceAt: occurrence.at, lastSentAt: lastSent, minutes: settings.rateLimitMinutes) {
            // Recorded, not sent: the window keeps running from `lastSent`, and a redelivery stays dropped.
            try NotifierStore.recordRateLimited(notificationId, user: occurrence.userId, activity: occurrence.activity,
                                                at: occurrence.at, lastSent: lastSent, tx.sql)
            tx.afterCommit { [unowned self] in
                host.count("rateLimited")
                host.countMetric("notifications", "outcome", "rate_limited")
                host.logger.notice("notification rate-limited", metadata: [
                    "notificationId": "\(notificationId)", "lastSentOccurrence": "\(lastSent)", "limitMinutes": "\(settings.rateLimitMinutes)",
                ])
            }
            return
        }

        let seq = tx.nextSeq  // the notification carries the seq of the event it is published with
        let notification = NotificationRenderer.render(
            notificationId: notificationId, seq: seq, userId: occurrence.userId, reminderId: occurrence.reminderId,
            scheduledFor: occurrence.at, sentAt: tx.now, test: due.test, activity: occurrence.activity, locale: due.locale,
            customTitle: due.title, customBody: due.body, occurrenceDay: occurrence.day, targetDay: occurrence.targetDay)
        let published = try tx.append(Events.notify, userId: occurrence.userId, activity: occurrence.activity, data: notification)
        guard published == seq else {
            // Never store a notification whose seq is not its event's (the savepoint undoes the append).
            throw WireError(.internal, "notify event got seq \(published), expected \(seq)")
        }
        try NotifierStore.insert(notification, tx.sql)
        tx.afterCommit { [unowned self] in
            host.count("notified")
            host.countMetric("notifications", "outcome", "sent")
        }
    }
}

/// Idempotency ids for quick actions: the version 5 (name-based, RFC 9562) UUID of
/// "<notificationId>\n<actionId>", stable across processes and platforms (Swift's `Hasher` is seeded
/// per process).
enum ActionKey {
    /// Our own namespace for these names (a random version 4 UUID, drawn once). Never change
    /// it: a retry across the change would no longer be recognised as the same action.
    static let namespace = RecordID("fe502641-2515-438d-97c9-71330c6ebe1c")!

    static func id(notificationId: String, actionId: String) -> RecordID {
        RecordID.nameBased(namespace: namespace, name: "\(notificationId)\n\(actionId)")
    }
}
