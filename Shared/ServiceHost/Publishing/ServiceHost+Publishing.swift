import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

// The outbox's far side: events leave once their commit is on disk, heartbeats fill the silence,
// and subscriptions are granted by the subscriber's identity.
extension ServiceHost {
    func finish(_ transaction: Transaction) {
        let pending = transaction.events
        guard let last = pending.last else { return }
        commits.afterDurable { [unowned self] in
            // Counted by runs of one type (a planner's step is thousands of one or two), not by a
            // lookup of the type's counter for each event.
            var run: (type: String, count: Int64, lastSeq: Int64)?
            func countRun() {
                if let run { metrics.published(type: run.type, count: run.count, lastSeq: run.lastSeq) }
            }
            for event in pending {
                do {
                    try events.send(topic: event.topic, event.envelope)
                    if run?.type != event.type {
                        countRun()
                        run = (event.type, 0, 0)
                    }
                    run!.count += 1
                    run!.lastSeq = event.seq
                } catch {
                    // Stored already: a subscriber that misses it gets it from events.since.
                    logger.warning("publish failed", metadata: ["topic": "\(event.topic)", "seq": "\(event.seq)", "error": "\(error)"])
                }
            }
            countRun()
            eventLog.published(through: last.seq)
        }
    }

    /// The zguide's Clone heartbeat: after a second of silence, the newest seq, so followers notice
    /// a gap or a silent publisher without polling.
    func heartbeatIfQuiet() {
        guard Date().timeIntervalSince(events.lastSent) * 1000 >= Double(Heartbeat.intervalMilliseconds),
              case let newest = store.newestSeq(),
              let frame = try? WireJSON.encode(Heartbeat(source: name, lastSeq: newest, time: time.now(), logId: eventLog.identity))
        else { return }
        announcedSeq = newest
        try? events.send(topic: Heartbeat.topic, frame)
    }

    func serveSubscriptions() {
        do {
            try events.serveSubscriptions(caller: caller(userId:)) { [unowned self] who, prefix in
                refused(who, reason: "subscription", "\"\(prefix.prefix(80))\"")
            }
        } catch {
            recordError("reading subscriptions failed", ["error": "\(error)"])
        }
    }
}
