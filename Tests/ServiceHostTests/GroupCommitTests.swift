import Foundation
import LHTClient
import LHTSchema
import Synchronization
import Testing
import TestSupport
import ZeroMQ
@testable import ServiceHost
@testable import SQLiteStorage
@testable import Storage

/// Under steady load, requests read within a window share one transaction and one sync; requests
/// that come seldom run at once (`GroupCommit`).
@Suite struct GroupCommitTests {
    static let ms: UInt64 = 1_000_000
    static let pipelining = Data("p".utf8)

    /// `count` requests read `gap` apart from time 0, from one connection that sends without waiting
    /// for replies; returns the state after them.
    static func arrivals(_ count: Int, every gap: UInt64, window: UInt64 = 2 * ms) -> GroupCommit {
        var group = GroupCommit(windowNanoseconds: window)
        for index in 0..<count { group.arrived(at: UInt64(index) * gap, from: pipelining) }
        return group
    }

    @Test func requestsThatComeSeldomRunAtOnce() {
        var group = Self.arrivals(50, every: 10 * Self.ms)
        #expect(!group.isUnderLoad)
        group.ran(at: 490 * Self.ms)
        group.arrived(at: 500 * Self.ms, from: Self.pipelining)
        #expect(group.nanosecondsLeft(at: 500 * Self.ms) == 0)
    }

    /// A connection is kept while it waits for a reply or may send again soon, and no longer: the
    /// map does not grow with every client ever heard from.
    @Test func connectionsThatMayNotComeAreForgottenWhenATurnRuns() {
        var group = GroupCommit(windowNanoseconds: 2 * Self.ms)
        let clients = (0..<100).map { Data("c\($0)".utf8) }
        for client in clients { group.arrived(at: 0, from: client) }
        group.ran(at: 0)
        #expect(group.connections.count == 100)
        for client in clients { group.answered(client, at: Self.ms) }
        group.ran(at: 2 * Self.ms)
        #expect(group.connections.count == 100)
        group.ran(at: 10 * Self.ms)
        #expect(group.connections.count == 0)
    }

    @Test func underSteadyLoadTheOldestWaitsOutTheWindowAndNoLonger() {
        var group = Self.arrivals(30, every: Self.ms)
        #expect(group.isUnderLoad)
        group.ran(at: 29 * Self.ms)
        group.arrived(at: 30 * Self.ms, from: Self.pipelining)
        #expect(group.nanosecondsLeft(at: 30 * Self.ms) == 2 * Self.ms)
        // Those read meanwhile join it: the window runs from the oldest.
        group.arrived(at: 31 * Self.ms, from: Self.pipelining)
        #expect(group.nanosecondsLeft(at: 31 * Self.ms + Self.ms / 2) == Self.ms / 2)
        #expect(group.nanosecondsLeft(at: 32 * Self.ms) == 0)
        #expect(group.nanosecondsLeft(at: 90 * Self.ms) == 0)
        // Once they ran, the next request opens a window of its own.
        group.ran(at: 32 * Self.ms)
        group.arrived(at: 33 * Self.ms, from: Self.pipelining)
        #expect(group.nanosecondsLeft(at: 33 * Self.ms) == 2 * Self.ms)
    }

    @Test func loadIsToldFromTheMeanGapAndComesBackQuicklyAfterAPause() {
        // Close, from the start: a few requests are enough.
        #expect(Self.arrivals(14, every: Self.ms / 2).isUnderLoad)
        #expect(!Self.arrivals(4, every: Self.ms / 2).isUnderLoad)
        // Around the window: 1.5 ms gaps are load, 3 ms gaps are not.
        #expect(Self.arrivals(100, every: 3 * Self.ms / 2).isUnderLoad)
        #expect(!Self.arrivals(100, every: 3 * Self.ms).isUnderLoad)
        // A pause ends the load at once, and an hour's pause counts as no more than a short one:
        // the request after it runs at once, and fourteen close requests after it are load again.
        var group = Self.arrivals(100, every: Self.ms / 2)
        group.ran(at: 50 * Self.ms)
        let later = 3_600_000 * Self.ms
        group.arrived(at: later, from: Self.pipelining)
        #expect(group.nanosecondsLeft(at: later) == 0)
        for index in 1..<14 { group.arrived(at: later + UInt64(index) * Self.ms / 2, from: Self.pipelining) }
        #expect(group.isUnderLoad)
    }

    /// Clients that each send their next request only once they have the last reply: once all of
    /// them are in, no one else can come, so waiting would gather no one.
    @Test func oneAtATimeClientsWaitOnlyForEachOther() {
        var group = GroupCommit(windowNanoseconds: 2 * Self.ms)
        let one = Data("1".utf8), two = Data("2".utf8)
        var now: UInt64 = 0
        /// `client` sends a request 0.2 ms after its last reply; returns how long it would wait.
        func call(_ client: Data) -> UInt64 {
            now += Self.ms / 5
            group.arrived(at: now, from: client)
            return group.nanosecondsLeft(at: now)
        }
        func run(answering clients: [Data]) {
            group.ran(at: now)
            for client in clients { group.answered(client, at: now) }
        }
        // One client alone, its requests close together: load, but never a wait.
        for _ in 0..<30 {
            #expect(call(one) == 0)
            run(answering: [one])
        }
        #expect(group.isUnderLoad)
        // A second one waits for the first, answered a moment ago; once both are in, they run.
        #expect(call(two) > 0)
        #expect(call(one) == 0)
        run(answering: [one, two])
        #expect(call(one) > 0)
        #expect(call(two) == 0)
        run(answering: [one, two])
        // Once the second has not sent again for a window after its reply, the first waits for no one again.
        #expect(call(one) > 0)
        run(answering: [one])
        now += 2 * Self.ms
        #expect(call(one) == 0)
        run(answering: [one])
        // A client with two requests unanswered at once may send more: it is waited for.
        _ = call(one)
        #expect(call(one) > 0)
    }

    /// Many clients, each sending one request now and then (the app on many phones): one was
    /// answered within the last window, so more may well come, and the first request read waits.
    @Test func manyClientsEachWithOneRequestAreWaitedFor() {
        var group = GroupCommit(windowNanoseconds: 2 * Self.ms)
        for index in 0..<40 {
            let client = Data("\(index)".utf8), at = UInt64(index) * Self.ms
            group.arrived(at: at, from: client)
            group.ran(at: at)
            group.answered(client, at: at)
        }
        group.arrived(at: 40 * Self.ms, from: Data("new".utf8))
        #expect(group.nanosecondsLeft(at: 40 * Self.ms) == 2 * Self.ms)
    }

    /// Reads sync nothing: they are not load, and a turn of reads alone opens no window; a write
    /// opens one from when it was read.
    @Test func readsAreNotLoadAndOpenNoWindow() {
        var reads = GroupCommit(windowNanoseconds: 2 * Self.ms)
        for index in 0..<30 { reads.arrived(at: UInt64(index) * Self.ms / 2, from: Self.pipelining, writes: false) }
        #expect(!reads.isUnderLoad)
        #expect(reads.nanosecondsLeft(at: 15 * Self.ms) == 0)

        var group = Self.arrivals(30, every: Self.ms)
        group.ran(at: 29 * Self.ms)
        group.arrived(at: 30 * Self.ms, from: Self.pipelining, writes: false)
        #expect(group.isUnderLoad)
        #expect(group.nanosecondsLeft(at: 30 * Self.ms) == 0)
        group.arrived(at: 31 * Self.ms, from: Self.pipelining)
        #expect(group.nanosecondsLeft(at: 31 * Self.ms) == 2 * Self.ms)
    }

    @Test func aZeroWindowNeverWaits() {
        let group = Self.arrivals(100, every: 0, window: 0)
        #expect(group.nanosecondsLeft(at: 0) == 0)
    }

    /// A bare service whose syncs take 8 ms (a slow disk), so that requests 5 ms apart arrive while
    /// earlier ones are unanswered; returns it with a count of the transactions its requests ran in.
    /// `streak.get` writes; `calendar.get` is a read, outside any transaction.
    static func slowDiskService(window: UInt64) throws -> (service: InProcessService, context: Context, stop: () -> Void, transactions: () -> Int) {
        // The commits before each request's transaction: one value per transaction.
        let transactions = Mutex<Set<UInt64>>([])
        let (service, context, stop) = try BareService.start { host, tests in
            host.groupCommit = GroupCommit(windowNanoseconds: window)
            host.sqlite.commits.beforeSync = { Thread.sleep(forTimeInterval: 0.008) }  // the slow disk itself
            host.handle(Ops.streakGet) { _, tx in
                transactions.withLock { _ = $0.insert(host.sqlite.commits.committed) }
                _ = try tests.append(tx, 1)
                return ServiceHostTests.note(1)
            }
            host.handleOutside(Ops.calendarGet) { _ in CalendarReply(days: []) }
        }
        return (service, context, stop, { transactions.withLock { $0.count } })
    }

    static let request = try! ServiceClient.requestFrame(Ops.streakGet, StreakGetRequest(userId: UserID("u1")!))
    static let readRequest = CalendarGetRequest(userId: UserID("u1")!, month: "2026-01")!

    /// Sends `count` requests `gap` seconds apart without waiting for replies; returns the replies received.
    static func sendOpenLoop(_ count: Int, gap: TimeInterval, to endpoint: String, context: Context,
                             request: Data = request) throws -> Int {
        let client = try Socket(context, .dealer)
        defer { client.close() }
        try client.connect(endpoint)
        for _ in 0..<count {
            try client.send(multipart: [Data(), request])
            Thread.sleep(forTimeInterval: gap)  // open loop: requests arrive at this pace whatever the replies do
        }
        var replies = 0
        while replies < count, try Poller.readable([client], timeoutMilliseconds: 5000)[0], try client.receiveMultipart() != nil { replies += 1 }
        return replies
    }

    /// `clients` threads, each calling one request at a time `calls` times; returns each call's seconds.
    static func oneAtATime(clients: Int, calls: Int, endpoint: String, context: Context) -> [Double] {
        let seconds = Mutex<[Double]>([])
        DispatchQueue.concurrentPerform(iterations: clients) { _ in
            let client = ServiceClient(context: context, endpoint: endpoint)
            for _ in 0..<calls {
                let started = Date()
                let reply = try? client.call(Ops.streakGet, StreakGetRequest(userId: UserID("u1")!), timeoutMilliseconds: 5000)
                let elapsed = reply == nil ? .infinity : Date().timeIntervalSince(started)
                seconds.withLock { $0.append(elapsed) }
            }
        }
        return seconds.withLock { $0 }
    }

    /// The running loop, with a 300 ms window: 40 requests 5 ms apart from a client that does not wait
    /// for replies share a handful of transactions; with no window, each runs in one of its own.
    @Test(arguments: [true, false]) func theLoopGathersRequestsUnderLoad(windowed: Bool) throws {
        let (service, context, stop, transactions) = try Self.slowDiskService(window: windowed ? 300 * Self.ms : UInt64(0))
        defer { stop() }
        #expect(try Self.sendOpenLoop(40, gap: 0.005, to: service.api, context: context) == 40)
        // Load is told after about a dozen close requests (the mean gap starts at four windows); the rest wait together.
        if windowed {
            #expect(transactions() <= 20, "40 requests 5 ms apart ran in \(transactions()) transactions")
        } else {
            // (A loop slowed by a busy machine may read two at once now and then.)
            #expect(transactions() >= 30, "40 requests 5 ms apart ran in \(transactions()) transactions")
        }
    }

    /// With the same 300 ms window: a request that comes alone after a pause, one client calling one
    /// request at a time, and four such clients at once wait for no one (a sync takes 8 ms); a client
    /// heard from lately with nothing unanswered may send again, so each phase starts after a pause.
    @Test func aLoneRequestAndOneAtATimeClientsRunAtOnce() throws {
        let (service, context, stop, _) = try Self.slowDiskService(window: 300 * Self.ms)
        defer { stop() }
        #expect(try Self.sendOpenLoop(40, gap: 0.005, to: service.api, context: context) == 40)
        // A pause of more than four windows: the next request comes alone.
        Thread.sleep(forTimeInterval: 1.5)  // the pause is the condition: no request for that long
        let alone = Self.oneAtATime(clients: 1, calls: 40, endpoint: service.api, context: context)
        // (A call slowed by a busy machine may pass 0.15 s now and then; waiting, most would.)
        let aloneWaited = alone.filter { $0 >= 0.15 }.count
        #expect(alone.count == 40 && aloneWaited <= 4, "\(aloneWaited) of one client's calls waited for others")
        // Past four windows the first client, gone quiet, is no longer waited for either.
        Thread.sleep(forTimeInterval: 1.5)  // the pause is the condition: no request for that long
        // Four at once: each turn runs once all four are in. A client that has made its last call is
        // waited for once, a window after its reply: three such waits, and a few slowed calls.
        let four = Self.oneAtATime(clients: 4, calls: 40, endpoint: service.api, context: context)
        let waited = four.filter { $0 >= 0.15 }.count
        #expect(four.count == 160 && waited <= 16, "\(waited) of four clients' calls waited for others")
    }

    /// A turn of reads alone syncs nothing, so it never waits for others (with the same 300 ms
    /// window): reads pipelined 5 ms apart, then one more read from another client, are answered at
    /// once; after writes sent the same way, one more write does wait for the pipelining client.
    @Test func readsAloneNeverWaitForTheWindow() throws {
        let (service, context, stop, _) = try Self.slowDiskService(window: 300 * Self.ms)
        defer { stop() }
        let client = ServiceClient(context: context, endpoint: service.api)
        func secondsFor(_ call: () throws -> Void) rethrows -> TimeInterval {
            let started = Date()
            try call()
            return Date().timeIntervalSince(started)
        }
        let reads = try ServiceClient.requestFrame(Ops.calendarGet, Self.readRequest)
        #expect(try Self.sendOpenLoop(40, gap: 0.005, to: service.api, context: context, request: reads) == 40)
        let read = try secondsFor { _ = try client.call(Ops.calendarGet, Self.readRequest, timeoutMilliseconds: 5000) }
        // A read that waited for the window would take 0.3 s at least; below that, with room for a busy machine.
        #expect(read < 0.25, "a read after pipelined reads took \(read) s")

        #expect(try Self.sendOpenLoop(40, gap: 0.005, to: service.api, context: context) == 40)
        let write = try secondsFor { _ = try client.call(Ops.streakGet, StreakGetRequest(userId: UserID("u1")!), timeoutMilliseconds: 5000) }
        #expect(write >= 0.2, "a write after pipelined writes took \(write) s: the window was not in effect")
    }
}
