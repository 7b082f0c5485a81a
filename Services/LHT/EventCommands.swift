import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import ZeroMQ

struct Subscribe: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe",
        abstract: "Follow events live: one JSON line per message, {\"topic\":…,\"event\":<envelope>}.",
        discussion: """
            Topics are <type>.<userId>.<activity>; a prefix selects, e.g. notify.henning. (the default: the \
            user's notifications), reminder.due., streak.updated. or "" for everything. lht connects to every \
            publisher whose topics a prefix can match, or only to --events. A line "listening …" on standard \
            error says when the subscription is in place. Messages published before it are not replayed, \
            unless a cursor says where the last run stopped.

            DELIVERY (like ntfy's subscriber): --exec runs a command per notification, --desktop shows it with \
            notify-send, --ntfy publishes it to an ntfy topic; one target per subscriber. Each keeps a cursor \
            (--cursor), the last delivered seq per publisher, written atomically after each delivery: a restarted \
            subscriber first delivers what it missed, and nothing twice. While the target is down (unreachable, \
            HTTP 5xx, a command's exit status not 0) the same notification is retried, 0.5 s doubling to 30 s.
            """)

    @Argument(help: "Topic prefixes (default notify.<user>.).")
    var prefixes: [String] = []

    @Option(help: ArgumentHelp("The user whose notifications to follow when no prefix is given (env LHT_USER).", valueName: "user"))
    var user: String?

    @Option(help: ArgumentHelp("Subscribe at this events endpoint (any service's PUB, or its instances', comma-separated) instead; repeatable.",
                               valueName: "endpoint"))
    var events: [String] = []

    @Flag(help: "Print a readable line per message instead of JSON.")
    var pretty = false

    @Option(help: "Exit after this many messages.")
    var count: Int?

    @Option(name: .customLong("max-wait"), help: ArgumentHelp(
        "Give up after this many seconds without the --count messages (status 3).", valueName: "seconds"))
    var maxWait: Double?

    @OptionGroup(title: "Delivery") var delivery: DeliveryOptions
    @OptionGroup(title: "Event endpoints") var publishers: EndpointOptions<EventsRole>
    /// Accepted so that scripts can pass every command the same endpoint flags; a publisher's api is where
    /// the subscription fetches what its socket missed (`events.since`).
    @OptionGroup(title: "Connection", visibility: .hidden) var connection: Connection

    func validate() throws {
        if prefixes.isEmpty, user == nil, environment["LHT_USER"] == nil {
            throw ValidationError("give a topic prefix, or --user (or LHT_USER) for the user's notifications")
        }
        if let user = user ?? environment["LHT_USER"], prefixes.isEmpty, UserID(user) == nil {
            throw ValidationError("--user: \"\(user)\" is not a userId (1-64 of A-Z a-z 0-9 _ -)")
        }
        if let count, count < 1 { throw ValidationError("--count must be 1 or more") }
        if let maxWait, maxWait <= 0 { throw ValidationError("--max-wait must be more than 0 seconds") }
        for value in events { _ = try Endpoint.list(value, flag: "events") }
    }

    func run() throws {
        let topics = prefixes.isEmpty ? [Events.notify.prefix(userId: UserID(user ?? environment["LHT_USER"]!)!)] : prefixes
        let publishing = ServiceName.allCases.filter { service in topics.contains { service.publishes(matching: $0) } }
        // Each events endpoint with the service behind it, whose api answers `events.since` for it.
        let followed: [(service: ServiceName, events: String)] = try events.isEmpty
            ? publishing.map { ($0, publishers.endpoint($0)) }
            : events.map { endpoint in (try publisher(at: endpoint, publishing: publishing), endpoint) }
        guard !followed.isEmpty else { throw ValidationError("no service publishes topics starting with \(topics.joined(separator: ", ")); use --events") }
        let endpoints = followed.map(\.events)
        let keys = try connection.security.load()
        let credentials = try followed.map { publisher throws(Failure) in try keys?.credentials(for: publisher.service) }
        // A subscriber runs until stopped: SIGTERM and SIGINT must stop it even when whoever started it had them
        // blocked (a libdispatch thread's mask is inherited through posix_spawn), and the commands it runs start clean.
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        if delivery.cursor != nil || delivery.exec != nil || delivery.desktop || delivery.ntfy != nil { stopBetweenHandOvers() }
        let target = try delivery.target()
        // Where the last run stopped, per publisher: what came after it is delivered first (events.since).
        let who = prefixes.isEmpty ? (user ?? environment["LHT_USER"]!) : prefixes.joined(separator: "+")
        let cursor = try delivery.cursorURL(who: who).map { url throws(Failure) in try DeliveryCursor(url) }
        let context: Context
        let subscriptions: [(service: ServiceName, subscription: Subscription)]
        do {
            context = try Context()
        } catch {
            throw Failure.local("cannot subscribe: \(error)")
        }
        if let cursor {
            // A cursor's first run starts "from now" at the publisher's newest seq, written down at once, so that
            // what is published after this start is delivered even if this run ends before it hears anything.
            for (publisher, credentials) in zip(followed, credentials) where cursor.seq(publisher.service) == nil {
                let client = ServiceClient(context: context, endpoints: try connection.apiEndpoints(publisher.service), credentials: credentials)
                if let now = try? client.call(Ops.eventsSince, EventPage.newestSeq, timeoutMilliseconds: connection.milliseconds) {
                    try cursor.advance(publisher.service, to: now.lastSeq)
                }
            }
        }
        do {
            subscriptions = try zip(followed, credentials).map { publisher, credentials in
                (publisher.service, try Subscription(context: context, eventsEndpoints: Endpoint.list(publisher.events, flag: "events"),
                                                     apiEndpoints: connection.apiEndpoints(publisher.service),
                                                     prefixes: topics, after: cursor?.seq(publisher.service),
                                                     timeoutMilliseconds: connection.milliseconds, credentials: credentials))
            }
        } catch {
            throw Failure.local("cannot subscribe: \(error)")
        }
        // The subscription travels to the publisher asynchronously (the zguide's slow joiner).
        Thread.sleep(forTimeInterval: 0.3)
        warn("listening on \(endpoints.joined(separator: " ")) for \(topics.map { "\"\($0)\"" }.joined(separator: " "))"
             + (target.map { ", delivering to \($0.name)" } ?? "") + (cursor.map { ", cursor \($0.url.path)" } ?? ""))
        let deadline = maxWait.map { Date().addingTimeInterval($0) }
        var received = 0
        while count.map({ received < $0 }) ?? true {
            try exitIfStopped()
            let wait = deadline.map { Int($0.timeIntervalSinceNow * 1000) } ?? 1000
            if wait <= 0 {
                throw Failure(status: Status.noAnswer, line: "error: received \(received) of \(count ?? 1) messages within \(maxWait!.formatted()) s at \(endpoints.joined(separator: " "))")
            }
            let readable = (try? Poller.readable(subscriptions.map(\.subscription.follower.subscriber), timeoutMilliseconds: min(wait, 1000)))
                ?? subscriptions.map { _ in false }
            for (index, (service, subscription)) in subscriptions.enumerated() where readable[index] {
                // Live events in seq order; a gap or a heartbeat ahead is filled from the publisher's events.since.
                let delivered: [ReceivedEvent]
                do {
                    delivered = try subscription.next(timeoutMilliseconds: 0)
                } catch let error as WireError {
                    throw Failure(error, service: service, op: Ops.eventsSince.name, client: subscription.follower.client, seconds: connection.seconds)
                }
                var handled = 0
                for event in delivered where count.map({ received < $0 }) ?? true {
                    // Started "from now" without the publisher's seq (it did not answer): everything before this one is behind us.
                    if let cursor, cursor.seq(service) == nil { try cursor.advance(service, to: event.seq - 1) }
                    if let target {
                        if target.accepts(event) {
                            try deliverWithRetries(event, to: target, deadline: deadline)
                            received += 1
                            warn("delivered \(event.topic) #\(event.seq) to \(target.name)")
                        }
                    } else {
                        emit(pretty ? prettyLine(event) : jsonLine(event))
                        received += 1
                    }
                    handled += 1
                    // After each hand-over: a restart delivers from the next one.
                    try cursor?.advance(service, to: event.seq)
                    try exitIfStopped()
                }
                // Every seq looked at so far is handled (delivered, or not ours): the cursor moves past them too.
                if handled == delivered.count, let checked = subscription.checkedThrough {
                    try cursor?.advance(service, to: checked)
                }
            }
        }
        withExtendedLifetime(context) {}
    }

    /// The service behind an `--events` endpoint: the one whose events endpoint it is, else the only one
    /// that publishes the topics asked for (its api answers `events.since` for it).
    private func publisher(at endpoint: String, publishing: [ServiceName]) throws -> ServiceName {
        if let known = ServiceName.allCases.first(where: { publishers.isGiven($0) && publishers.endpoint($0) == endpoint }) { return known }
        if publishing.count == 1 { return publishing[0] }
        if let known = ServiceName.allCases.first(where: { publishers.endpoint($0) == endpoint }) { return known }
        throw ValidationError("--events \(endpoint): several services publish these topics; name its publisher with "
            + ServiceName.allCases.map { "--" + $0.lhtFlag(.events) }.joined(separator: ", ") + " instead")
    }

    private func jsonLine(_ event: ReceivedEvent) -> String {
        let envelope = (try? WireJSON.encode(event)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        return "{\"topic\":\(JSONValue.string(event.topic).jsonLine),\"event\":\(envelope)}"
    }
}

/// One readable line for an event: its time, topic, seq and what it says.
func prettyLine(_ event: ReceivedEvent) -> String {
    let head = "\(event.time)  \(event.topic)  #\(event.seq)"
    func reminderLine(_ occurrence: Occurrence, late: Bool = false, test: Bool = false) -> String {
        var text = head + "  \(occurrence.activity.rawValue) \(occurrence.day) \(occurrence.localTime)"
        if let cause = occurrence.cause { text += "  cause=\(cause)" }
        if late { text += "  (late)" }
        if test { text += "  (test)" }
        return text
    }
    switch event.data {
    case .notify(let notification):
        let actions = notification.actions.map(\.id)
        return head + "  \"\(notification.title)\" \(notification.body)"
            + (actions.isEmpty ? "" : "  [\(actions.joined(separator: " "))]") + "  id=\(notification.notificationId)"
            + (notification.test ? "  (test)" : "")
    case .sessionLogged(let session):
        return head + "  \(session.activity.rawValue) \(session.start) – \(session.end)  id=\(session.id)"
    case .noalcLogged(let entry):
        return head + "  \(entry.level.rawValue) for \(entry.day)  id=\(entry.id)"
    case .streakUpdated(let state):
        return head + "  streak \(state.streakDays) days, \(state.rewardsAvailable) jokers"
    case .reminderChanged(.deleted(let deletion)):
        return head + "  deleted \(deletion.id)"
    case .reminderChanged(.put(let reminder)):
        return head + "  \(reminder.activity.rawValue) at \(reminder.time)  id=\(reminder.id)"
    case .occurrence(let occurrence):
        return reminderLine(occurrence)
    case .reminderDue(let due):
        return reminderLine(due.occurrence, late: due.late, test: due.test)
    case nil:
        return head
    }
}

struct Action: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "action",
        abstract: "Answer a notification's quick action, e.g. noalc.steady (logs the level) or open.meditation.",
        discussion: "A NoAlc level alone (steady, easy, wild) means noalc.<level>.")

    @Argument(help: "The notification's id (<reminderId>@<instant>).")
    var notificationId: String

    @Argument(help: "The action: noalc.steady, noalc.easy, noalc.wild, open.meditation, open.workout.")
    var actionId: String

    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Connection") var connection: Connection

    func run() throws {
        let action = NoAlcLevel(rawValue: actionId) != nil ? "noalc.\(actionId)" : actionId
        let answer = try Client(connection).call(Ops.notificationAction,
                                                 NotificationActionRequest(notificationId: notificationId, actionId: action))
        if output.json { return emit(answer.rawText) }
        // Two reply shapes: {entry} for a NoAlc level, {deepLink} for open.*.
        if let entry = answer.value.entry {
            emit("logged NoAlc \(entry.level.rawValue) for \(entry.day) (\(entry.id))")
        } else if let link = answer.value.deepLink {
            emit("open \(link)")
        } else {
            emit(answer.rawText)
        }
    }
}

struct Notifications: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications", abstract: "List the notifications the user was sent, oldest first.")

    @Option(help: "Only those after this notify seq.")
    var after: Int?

    @OptionGroup var options: UserCommandOptions

    func run() throws {
        let client = try Client(connection)
        let answer = try client.call(Ops.notificationList, NotificationListRequest(userId: try user.userID(), after: Int64(after ?? 0)))
        if output.json { return emit(answer.rawText) }
        let list = answer.value.notifications
        guard !list.isEmpty else { return emit("no notifications for \(user.id)") }
        var table = Table("seq", "sent", "activity", "title", "actions", "id")
        for item in list {
            table.add(String(item.seq), item.sentAt.description, item.activity.rawValue + (item.test ? " (test)" : ""), item.title,
                      item.actions.map(\.id).joined(separator: ","), item.notificationId)
        }
        table.lines.forEach(emit)
    }
}
