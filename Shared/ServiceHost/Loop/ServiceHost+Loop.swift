import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

extension ServiceHost {
    /// Serves until `shutdown` is requested; the message in hand is finished first.
    public func run(until shutdown: ShutdownSignal) {
        do {
            try commits.startThread()
        } catch {
            // Commits are then synced on this thread, as outside the loop: slower, as safe.
            recordError("the commit sync thread did not start", ["error": "\(error)"])
        }
        do {
            try store.readsBehindTheLog?.startAnswering()
        } catch {
            // Answers are then taken at each turn of the loop: later, as correct.
            recordError("the wake for reads behind the log did not start", ["error": "\(error)"])
        }
        isServing = true
        store.waitAnsweringHealth = { [unowned self] isFinished in answerHealthOnly(until: isFinished) }
        store.logLockReleased = { [metrics] held in metrics.logLockReleased(heldNanoseconds: held) }
        defer {
            store.waitAnsweringHealth = nil
            store.logLockReleased = nil
            store.readsBehindTheLog?.stopAnswering()
            commits.stopThread()
            store.close()
        }
        let sockets = [api] + watched.map(\.socket)
        // Other threads' news: a sync done, reads answered. Taken before what they tell is looked at.
        let signals = [commits.wake, store.readsBehindTheLog?.answersWake].compactMap { $0 }
        while !shutdown.isRequested {
            // Requests held wait out what is left of their group commit window, if any.
            var timeout = held.isEmpty ? 100 : Int((groupCommit.nanosecondsLeft(at: DispatchTime.now().uptimeNanoseconds) + 999_999) / 1_000_000)
            if let deadline = attached?.nextDeadline() {
                timeout = max(0, min(timeout, Int(deadline.milliseconds(since: time.now()))))
            }
            // Upstream calls in flight are polled too: their replies and deadlines wake the loop.
            let upstream = exchanges.pollSet()
            if let deadline = exchanges.millisecondsToNextDeadline() { timeout = min(timeout, deadline) }
            do {
                let readable = try Poller.readable(sockets + upstream, signals: signals, timeoutMilliseconds: timeout)
                apiLookedAt = DispatchTime.now().uptimeNanoseconds
                for (signal, given) in zip(signals, readable.suffix(signals.count)) where given { signal.clear() }
                if readable[0] || !held.isEmpty { try serveAPI() }
                for (index, entry) in watched.enumerated() where readable[index + 1] {
                    entry.onReadable()
                    answerHealthIfDue()
                }
                store.readsBehindTheLog?.runAnswered()
                addCountsFromOtherThreads()
                commits.runDurable()
                exchanges.serve(readable: readable[sockets.count..<sockets.count + upstream.count])
                for feed in feeds {
                    feed.tick()
                    answerHealthIfDue()
                }
                attached?.tick()
                heartbeatIfQuiet()
                syncHandshakeRefusals()
                syncOwnershipMetrics()
            } catch let error as ZMQError where error.isTerminated {
                break
            } catch {
                recordError("loop error", ["error": "\(error)"])
            }
        }
        // Requests read and held are answered; calls in flight end as unavailable, so deferred
        // requests still get their reply. Nothing more is held meanwhile.
        isServing = false
        while !held.isEmpty, (try? serveAPI()) != nil {}
        exchanges.cancelAll()
        logger.info("stopping")
    }

    /// For a process about to exit (PROTOCOL "Operations", Stop), after `run` returned: takes no
    /// more requests, and gives the replies and events already queued up to `lingerMilliseconds`
    /// to reach their peers, since a socket closed with LINGER 0 drops them. Then terminates the
    /// context, waiting at most `lingerMilliseconds` + 200 ms. Returns whether everything went out.
    @discardableResult
    public func closeForExit(lingerMilliseconds: Int32 = 1000) -> Bool {
        for socket in [api, events.socket] { try? socket.setLinger(milliseconds: lingerMilliseconds) }
        api.close()
        events.socket.close()
        for entry in watched { entry.socket.close() }
        return context.terminate(waitingAtMost: Int(lingerMilliseconds) + 200)
    }

    func health() -> HealthReply {
        addCountsFromOtherThreads()
        var counters = counters
        for (reason, count) in security?.refusals ?? [:] { counters["authRefused.\(reason.rawValue)"] = Int64(count) }
        let upstreams = feeds.map { UpstreamHealth(name: $0.upstream.rawValue, appliedSeq: $0.appliedSeq, upstreamSeq: $0.upstreamSeq) }
        return HealthReply(service: name, version: version, uptimeSeconds: Int64(Date().timeIntervalSince(startedAt)),
                           lastSeq: max(eventLog.publishedSeq, announcedSeq), counters: counters, upstreams: upstreams, lastError: lastError,
                           logId: eventLog.identity, tzdata: attached?.tzdataVersion, instance: instance,
                           owns: ownership)
    }
}
