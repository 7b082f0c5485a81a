import Foundation
import LHTClient
import LHTSchema
import Logging
import Synchronization
import Testing
import TestSupport
import ZeroMQ
@testable import ServiceHost
@testable import SQLiteStorage
@testable import Storage

/// A bare host as an in-process service (`startService`: built and run on a thread of its own);
/// `configure` registers its ops there before the loop starts. `stop` also removes its data.
final class BareService: Service {
    let host: ServiceHost

    static func start(_ configure: @escaping @Sendable (ServiceHost, ServiceHostTests) -> Void)
        throws -> (service: InProcessService, context: Context, stop: () -> Void) {
        let context = try Context()
        let tests = ServiceHostTests()
        let service = try startService(context: context) { context in
            let host = try ServiceHost(service: .noalcStreak, apiEndpoint: "tcp://127.0.0.1:*", eventsEndpoint: "tcp://127.0.0.1:*",
                                       dataDirectory: tests.directory, layout: StoreLayout(sqliteMigrations: []), logger: Logger(label: "test"), context: context)
            configure(host, tests)
            return BareService(host: host)
        }
        return (service, context, {
            service.stop()
            try? FileManager.default.removeItem(at: tests.directory)
        })
    }

    private init(host: ServiceHost) { self.host = host }
}

/// While the loop runs, commits reach the disk on a thread of their own (`CommitSync`, tested by
/// itself in StorageTests): a reply or event waits for the sync of every commit before it, and
/// `health` does not.
@Suite struct DurableRepliesTests {
    /// Holds the syncer thread before each sync while closed; once open, stays open.
    final class Gate: Sendable {
        private let opened = Atomic(false)
        private let turnstile = DispatchSemaphore(value: 0)
        func open() { if !opened.exchange(true, ordering: .sequentiallyConsistent) { turnstile.signal() } }
        /// Blocks until `open()`, then lets the next one through as well.
        func pass() {
            turnstile.wait()
            turnstile.signal()
        }
    }

    @Test func repliesAndEventsWaitForTheDiskAndHealthDoesNot() throws {
        let gate = Gate()
        let (service, context, stop) = try BareService.start { host, tests in
            host.handle(Ops.streakGet) { _, tx in
                _ = try tests.append(tx, 7)
                return ServiceHostTests.note(7)
            }
            host.sqlite.commits.beforeSync = { gate.pass() }
        }
        defer {
            gate.open()
            stop()
        }
        let subscriber = try Socket(context, .sub), writer = try Socket(context, .dealer)
        defer { subscriber.close(); writer.close() }
        try subscriber.subscribe(Events.streakUpdated.name)
        try subscriber.connect(service.events)
        try writer.connect(service.api)
        let health = ServiceClient(context: context, endpoint: service.api)
        try subscriber.awaitSubscribed()

        try writer.send(multipart: [Data(), ServiceClient.requestFrame(Ops.streakGet, StreakGetRequest(userId: UserID("u1")!))])
        // The write is committed, its sync held: no reply, no event, and health still answers at once
        // with the seq that is on disk.
        #expect(try !Poller.readable([writer], timeoutMilliseconds: 300)[0], "a reply left before its commit was on disk")
        let started = Date()
        let during = try health.call(Ops.health, NoFields(), timeoutMilliseconds: 1000)
        // The sync is held until the test lets it go: a health behind it would wait for good, so half a
        // second tells "at once" from "blocked" with room for a busy machine.
        #expect(Date().timeIntervalSince(started) < 0.5)
        #expect(during.lastSeq == 0)
        #expect(try !Poller.readable([subscriber], timeoutMilliseconds: 50)[0], "an event left before its commit was on disk")

        gate.open()
        #expect(try Poller.readable([writer], timeoutMilliseconds: 2000)[0])
        let reply = try #require(try writer.receiveMultipart()?.last)
        #expect(try JSONDecoder().decode(ReplyFrame<StreakState>.self, from: reply).data?.streakDays == 7)
        #expect(try Poller.readable([subscriber], timeoutMilliseconds: 2000)[0])
        #expect(try health.call(Ops.health, NoFields(), timeoutMilliseconds: 1000).lastSeq == 1)
    }
}

/// While the loop waits for another thread (the checkpointer copying the log back before it
/// rewinds), it answers `health` and holds every other request for its next turn.
@Suite struct HealthWhileWaitingTests {
    @Test func healthIsAnsweredAndOtherRequestsWaitTheirTurn() throws {
        let tests = ServiceHostTests()
        defer { try? FileManager.default.removeItem(at: tests.directory) }
        let host = try tests.makeHost()
        tests.handleStreakGetRefusingBad(host)
        let writer = try Socket(host.context, .dealer), monitor = try Socket(host.context, .dealer)
        defer { writer.close(); monitor.close() }
        try writer.connect(host.apiEndpoint)
        try monitor.connect(host.apiEndpoint)
        for day in 1...3 {
            try writer.send(multipart: [Data(), Data(#"{"v":1,"op":"streak.get","data":{"userId":"u1","asOf":"2026-01-0\#(day)"}}"#.utf8)])
        }
        try monitor.send(multipart: [Data(), ServiceClient.requestFrame(Ops.health, NoFields())])

        var turns = 0
        host.answerHealthOnly(until: {
            turns += 1
            return (try? Poller.readable([monitor], timeoutMilliseconds: 0)[0]) == true || turns > 2_000
        })
        let health = try #require(try monitor.receiveMultipart(dontWait: true)?.last)
        #expect(try JSONDecoder().decode(ReplyFrame<HealthReply>.self, from: health).ok)
        #expect(try !Poller.readable([writer], timeoutMilliseconds: 50)[0], "a held request was answered while the loop waited")
        #expect(host.eventLog.lastSeq == 0)

        try host.serveWaitingRequests()
        var days: [Int] = []
        while days.count < 3, try Poller.readable([writer], timeoutMilliseconds: 2000)[0], let reply = try writer.receiveMultipart()?.last {
            days.append(try #require(try JSONDecoder().decode(ReplyFrame<StreakState>.self, from: reply).data?.streakDays))
        }
        #expect(days == [1, 2, 3], "held requests are served in the order they came")
        #expect(host.held.isEmpty)
    }

    /// Under the running loop: a request held while an op waited is answered on the next turn,
    /// though nothing more arrives on the socket to wake the loop.
    @Test func aHeldRequestIsAnsweredWithoutAnotherArriving() throws {
        let waitStarted = DispatchSemaphore(value: 0)
        let (service, context, stop) = try BareService.start { host, tests in
            tests.handleStreakGetRefusingBad(host)
            host.handleOutside(Ops.calendarGet) { _ in
                waitStarted.signal()
                let until = Date().addingTimeInterval(0.3)
                host.answerHealthOnly(until: { Date() >= until })
                return CalendarReply(days: [])
            }
        }
        defer { stop() }
        let waiting = try Socket(context, .dealer)
        defer { waiting.close() }
        try waiting.connect(service.api)
        try waiting.send(multipart: [Data(), ServiceClient.requestFrame(Ops.calendarGet, CalendarGetRequest(userId: UserID("u1")!, month: "2026-01")!)])
        // The wait has begun before the request it must hold is sent.
        #expect(waitStarted.wait(timeout: .now() + 10) == .success, "calendar.get never reached its handler")
        let client = ServiceClient(context: context, endpoint: service.api)
        let started = Date()
        let reply = try client.call(Ops.streakGet, StreakGetRequest(userId: UserID("u1")!, asOf: LocalDay(year: 2026, month: 1, day: 2)!),
                                    timeoutMilliseconds: 3000)
        #expect(reply.streakDays == 2)
        #expect(Date().timeIntervalSince(started) < 1.5)
        #expect(try Poller.readable([waiting], timeoutMilliseconds: 1000)[0])
    }
}
