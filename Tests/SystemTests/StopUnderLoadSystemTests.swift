import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// PROTOCOL "Operations", stop: SIGTERM under load loses no acknowledged request.
@Suite struct StopUnderLoadSystemTests {
    /// Many pipelined session.log, SIGTERM midway: exit 0 within 2 s, every acked id stored (seen
    /// after a restart) and published to the subscriber that was connected. Several rounds, since
    /// losing queued events at close was a one-in-five thing.
    @Test(.timeLimit(.minutes(3))) func stopUnderLoadLosesNoAckedRequest() throws {
        for round in 0..<4 {
            let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off"])
            let context = try Context()
            // A subscriber that reads all along but a little slower than the service publishes,
            // so events queue in the service and a stop finds some still to send.
            let subscriber = try SlowSubscriber(endpoint: logger.events, context: context)
            let dealer = try Socket(context, .dealer)
            try dealer.setSendHighWaterMark(0)
            try dealer.setReceiveHighWaterMark(0)
            try dealer.connect(logger.api)

            // At most `window` requests ahead of the acks read, so the stop comes mid-load however fast
            // the service is (sent all at once, a faster service had answered all 6,000 before it).
            let total = 6000, window = 1000
            var sent = 0
            func sendNext() throws {
                var data = Sessions.session(user: "stop\(round)", index: sent)
                data["id"] = UUID().uuidString.lowercased()
                let frame = try JSONSerialization.data(withJSONObject: ["v": 1, "op": "session.log", "data": data])
                _ = try dealer.send(multipart: [Data(), frame])
                sent += 1
            }
            while sent < window { try sendNext() }
            // Read acks until about a third are in, sending one more for each, then SIGTERM, and keep
            // reading (and sending) while answers still come.
            var acked: Set<String> = []
            var stopped: (status: Int32?, seconds: TimeInterval)?
            try dealer.setReceiveTimeout(milliseconds: 10_000)
            while acked.count < total / 3, let frames = try dealer.receiveMultipart() {
                if let id = Self.ackedId(frames.last!) { acked.insert(id) }
                if sent < total { try sendNext() }
            }
            let signalled = Date()
            logger.process.terminate()
            // Answers are read until the service has exited, and for half a second after: not until the
            // first half-second without one, since the stop's last sync can take longer on a busy disk.
            try dealer.setReceiveTimeout(milliseconds: 100)
            var exited: Date?
            while exited.map({ Date().timeIntervalSince($0) < 0.5 }) ?? (Date().timeIntervalSince(signalled) < 5) {
                if let frames = try dealer.receiveMultipart() {
                    if let id = Self.ackedId(frames.last!) { acked.insert(id) }
                    if sent < total { try sendNext() }
                } else if exited == nil, !logger.process.isRunning {
                    exited = Date()
                }
            }
            _ = logger.process.poll(forUpTo: max(0, 5 - Date().timeIntervalSince(signalled)))
            // The exit as the reading saw it (at most one receive timeout late), not after the half-second drain.
            stopped = (logger.process.poll()?.status, (exited ?? Date()).timeIntervalSince(signalled))
            #expect(stopped?.status == 0, "round \(round)")
            #expect((stopped?.seconds ?? 99) < 2.5, "round \(round): exit took \(stopped?.seconds ?? -1) s")
            #expect(acked.count >= total / 3, "round \(round): \(acked.count) acked")

            // Every acked event reached the subscriber that was connected.
            let published = subscriber.finish()
            let unpublished = acked.subtracting(published)
            print("stop round \(round): \(acked.count) acked, \(published.count) published to the subscriber, exit in \(String(format: "%.2f", stopped?.seconds ?? -1)) s")
            #expect(unpublished.isEmpty, "round \(round): \(unpublished.count) of \(acked.count) acked events never reached the subscriber")
            // And the stop answered what it held: every request whose event went out got its ack
            // (exiting without closing the api with a linger lost up to a few hundred answers a stop).
            let unanswered = published.subtracting(acked)
            #expect(unanswered.isEmpty, "round \(round): \(unanswered.count) requests stored and published but never answered")

            // Every acked id is stored: after a restart, events.since returns each one.
            try logger.restart()
            let client = try WireClient(logger.api, context: context)
            var stored: Set<String> = []
            var after: Int64 = 0
            while true {
                let page = try client.ok("events.since", ["after": after, "limit": 1000])
                let events = page["events"]?.arrayValue ?? []
                if events.isEmpty { break }
                for event in events { if let id = event["data"]?["id"]?.stringValue { stored.insert(id) } }
                after = events.last?["seq"]?.intValue ?? after
            }
            let lost = acked.subtracting(stored)
            #expect(lost.isEmpty, "round \(round): \(lost.count) acked requests lost")
            logger.stop()
        }
    }

    static func ackedId(_ reply: Data) -> String? {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: reply), value["ok"]?.boolValue == true else { return nil }
        return value["data"]?["id"]?.stringValue
    }
}

/// Reads `session.logged.` events on its own thread, pausing briefly after each, until `finish`.
final class SlowSubscriber: @unchecked Sendable {
    private let ids = Mutex<Set<String>>([])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// Returns once the subscription has reached the publisher.
    init(endpoint: String, context: Context) throws {
        let subscribed = DispatchSemaphore(value: 0)
        let isSubscribed = Mutex(false)
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            guard let socket = try? Socket(context, .sub) else { subscribed.signal(); return }
            try? socket.setReceiveHighWaterMark(100)
            try? socket.subscribe("session.logged.")
            try? socket.connect(endpoint)
            // Nothing is published before the subscription is in, so what this receives is the heartbeat.
            isSubscribed.withLock { $0 = (try? socket.awaitSubscribed()) != nil }
            subscribed.signal()
            try? socket.setReceiveTimeout(milliseconds: 1000)
            while true {
                guard let frames = try? socket.receiveMultipart() else {
                    if stopping.load(ordering: .acquiring) { return }  // a quiet second after the stop
                    continue
                }
                if let envelope = try? JSONDecoder().decode(JSONValue.self, from: frames[1]), let id = envelope["data"]?["id"]?.stringValue {
                    ids.withLock { _ = $0.insert(id) }
                }
                usleep(250)  // slower than the service publishes: that is the point
            }
        }
        subscribed.wait()
        guard isSubscribed.withLock({ $0 }) else {
            stopping.store(true, ordering: .releasing)
            throw HarnessError("the slow subscriber's subscription did not reach \(endpoint)")
        }
    }

    /// Waits until nothing arrived for a second, then returns every id received.
    func finish() -> Set<String> {
        stopping.store(true, ordering: .releasing)
        done.wait()
        return ids.withLock { $0 }
    }
}
