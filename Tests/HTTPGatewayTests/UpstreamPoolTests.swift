import Foundation
@testable import HTTPGateway
import Synchronization
import Testing
import ZeroMQ

/// The gateway's way to a service: many requests in flight on one DEALER, each reply found by its
/// id frame whatever the order; a try that runs out moves on as `ServiceClient` would. Real
/// ROUTERs over TCP stand in for the services, each answered on a thread of its own.
@Suite struct UpstreamPoolTests {
    /// Makes, binds and serves a ROUTER on a loopback port from a thread of its own (a socket stays
    /// on one), and returns its endpoint once bound.
    static func router(_ context: Context, receiveTimeoutMilliseconds: Int32, serve: @escaping @Sendable (Socket) -> Void) throws -> String {
        let bound = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var endpoint = ""
        Thread {
            guard let router = try? Socket(context, .router), let made = try? router.bind("tcp://127.0.0.1:*"),
                  (try? router.setReceiveTimeout(milliseconds: receiveTimeoutMilliseconds)) != nil else {
                bound.signal()
                return
            }
            endpoint = made
            bound.signal()
            serve(router)
            router.close()
        }.start()
        bound.wait()
        guard !endpoint.isEmpty else { throw ZMQError(code: EADDRNOTAVAIL) }
        return endpoint
    }

    /// A ROUTER on a free loopback port that takes `count` requests, answers them all, last first,
    /// and then takes no more.
    final class ReversingService: @unchecked Sendable {
        private(set) var endpoint = ""
        private let stopped = NSLock()
        private var isStopped = false
        private let stopSignal = DispatchSemaphore(value: 0)

        /// The ROUTER is made, bound and used on the service's own thread (a socket stays on one).
        init(_ context: Context, count: Int) throws {
            endpoint = try UpstreamPoolTests.router(context, receiveTimeoutMilliseconds: 100) { [self] router in
                var held: [[Data]] = []
                while held.count < count, !stopping {
                    if let frames = try? router.receiveMultipart() { held.append(frames) }
                }
                for frames in held.reversed() {
                    let reply = Data("reply to ".utf8) + frames[frames.count - 1]
                    _ = try? router.send(multipart: Array(frames.dropLast()), then: reply)
                }
                stopSignal.wait()  // the ROUTER stays open, taking no more, until the test is done with it
            }
        }

        private var stopping: Bool { stopped.withLock { isStopped } }

        func stop() {
            stopped.withLock { isStopped = true }
            stopSignal.signal()
        }
    }

    @Test func requestsInFlightTogetherEachGetTheirOwnReply() async throws {
        let context = try Context()
        let service = try ReversingService(context, count: 20)
        defer { service.stop() }
        let pool = try UpstreamPool(context: context, endpoints: [service.endpoint], credentials: nil, name: "test")
        defer { pool.stop() }
        // All 20 must be in flight at once: the service answers none before it holds the 20th.
        let replies = await withTaskGroup(of: (Int, String?).self) { group in
            for n in 0..<20 {
                group.addTask {
                    let reply = await pool.exchange(Data(#"{"v":1,"op":"health","n":\#(n)}"#.utf8), timeoutMilliseconds: 20_000)
                    return (n, reply.map { String(decoding: $0, as: UTF8.self) })
                }
            }
            var all: [Int: String?] = [:]
            for await (n, reply) in group { all[n] = reply }
            return all
        }
        for n in 0..<20 { #expect(replies[n] == #"reply to {"v":1,"op":"health","n":\#(n)}"#) }
    }

    @Test func anUnansweredReadGoesToTheNextInstanceAndAnUnsafeWriteDoesNot() async throws {
        let context = try Context()
        let fallsSilent = try ReversingService(context, count: 1), answering = try ReversingService(context, count: 1)
        defer { fallsSilent.stop(); answering.stop() }
        let pool = try UpstreamPool(context: context, endpoints: [fallsSilent.endpoint, answering.endpoint], credentials: nil, name: "test")
        defer { pool.stop() }
        let read = Data(#"{"v":1,"op":"health"}"#.utf8)
        #expect(await pool.exchange(read, timeoutMilliseconds: 20_000) == Data("reply to ".utf8) + read)
        // A session.log without an id reached the first instance, which no longer answers: it may
        // have been done there, so it is not sent on to the next.
        let write = await pool.exchange(Data(#"{"v":1,"op":"session.log","data":{"activity":"workout"}}"#.utf8), timeoutMilliseconds: 1000)
        #expect(write == nil)
        // The silent one is now passed over: the read goes to the next instance, which answers.
        #expect(await pool.exchange(read, timeoutMilliseconds: 20_000) == Data("reply to ".utf8) + read)
    }

    /// A ROUTER that answers at once, with its name, except a request naming "slow", which it
    /// answers `delay` later; it counts what it took.
    final class SlowOnOneService: @unchecked Sendable {
        private(set) var endpoint = ""
        private let lock = NSLock()
        private var isStopped = false, taken = 0

        init(_ context: Context, name: String, delay: TimeInterval) throws {
            endpoint = try UpstreamPoolTests.router(context, receiveTimeoutMilliseconds: 10) { [self] router in
                var held: [(due: Date, frames: [Data])] = []
                while !lock.withLock({ isStopped }) {
                    if let frames = try? router.receiveMultipart() {
                        lock.withLock { taken += 1 }
                        let slow = String(decoding: frames[frames.count - 1], as: UTF8.self).contains("slow")
                        held.append((slow ? Date().addingTimeInterval(delay) : Date(), frames))
                    }
                    let now = Date()
                    for (_, frames) in held.filter({ $0.due <= now }) {
                        _ = try? router.send(multipart: Array(frames.dropLast()), then: Data("\(name): ".utf8) + frames[frames.count - 1])
                    }
                    held.removeAll { $0.due <= now }
                }
            }
        }

        var requestsTaken: Int { lock.withLock { taken } }
        func stop() { lock.withLock { isStopped = true } }
    }

    /// The reply to `frame`, waited for on this thread: no suspension point, so a busy test run
    /// cannot hold this test back between a request and the next.
    static func exchange(_ pool: UpstreamPool, _ frame: Data, timeoutMilliseconds: Int) -> Data? {
        let reply = Mutex<Data?>(nil), done = DispatchSemaphore(value: 0)
        pool.send(frame, timeoutMilliseconds: timeoutMilliseconds) { answer in
            reply.withLock { $0 = answer }
            done.signal()
        }
        done.wait()
        return reply.withLock { $0 }
    }

    @Test func anInstanceThatAnswersOthersKeepsTheRequestItIsSlowOn() throws {
        let context = try Context()
        let first = try SlowOnOneService(context, name: "first", delay: 3), second = try SlowOnOneService(context, name: "second", delay: 0)
        defer { first.stop(); second.stop() }
        let pool = try UpstreamPool(context: context, endpoints: [first.endpoint, second.endpoint], credentials: nil, name: "test")
        defer { pool.stop() }
        // 4 s over two instances: 2 s a try, so the slow answer comes after its try ran out (the
        // delay starts when the first instance takes it); the reads keep the first one answering.
        let slow = Data(#"{"v":1,"op":"health","slow":true}"#.utf8)
        let slowReply = Mutex<Data?>(nil), slowDone = DispatchSemaphore(value: 0)
        pool.send(slow, timeoutMilliseconds: 4000) { answer in
            slowReply.withLock { $0 = answer }
            slowDone.signal()
        }
        let read = Data(#"{"v":1,"op":"health"}"#.utf8)
        let end = Date().addingTimeInterval(3.5)
        while Date() < end {
            #expect(Self.exchange(pool, read, timeoutMilliseconds: 4000) == Data("first: ".utf8) + read)
            Thread.sleep(forTimeInterval: 0.1)  // a read now and then, as other clients would send
        }
        slowDone.wait()
        #expect(slowReply.withLock { $0 } == Data("first: ".utf8) + slow)
        #expect(second.requestsTaken == 0, "the live first instance was passed over")
    }

    @Test func aBearerTokenIsReadWhateverTheSchemesCase() {
        #expect(TokenTable.bearer("Bearer lht_abc") == "lht_abc")
        #expect(TokenTable.bearer("bEARER \tlht_abc  ") == "lht_abc")
        for refused in [nil, "", "Bearer ", "Bearer    ", "Basic lht_abc", "Bearerlht_abc", "Bearer"] as [String?] {
            #expect(TokenTable.bearer(refused) == nil, "\(refused ?? "nil")")
        }
    }
}
