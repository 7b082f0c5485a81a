import Foundation
import Testing
import ZeroMQ

/// Real sockets over TCP on 127.0.0.1, wildcard ports so tests run in parallel.
struct SocketTests {
    let context: Context

    init() throws { context = try Context() }

    /// Waits for a message with a deadline, so a broken test fails instead of hanging.
    func receive(_ socket: Socket, within milliseconds: Int32 = 2000) throws -> [Data]? {
        try socket.setReceiveTimeout(milliseconds: milliseconds)
        return try socket.receiveMultipart()
    }

    @Test func requestThroughRouterGetsItsReply() throws {
        let router = try Socket(context, .router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:") && !endpoint.hasSuffix(":*"))
        let request = try Socket(context, .req)
        try request.connect(endpoint)
        try request.send("ping ü")

        let frames = try #require(try receive(router))
        #expect(frames.count == 3)  // identity, empty delimiter, body
        #expect(frames[1].isEmpty)
        #expect(String(decoding: frames[2], as: UTF8.self) == "ping ü")
        try router.send(multipart: [frames[0], Data(), Data("pong".utf8)])
        #expect(try receive(request) == [Data("pong".utf8)])
    }

    @Test func dealerSpeaksRequestStyleWithDelimiter() throws {
        let router = try Socket(context, .router)
        let endpoint = try router.bind("tcp://127.0.0.1:*")
        let dealer = try Socket(context, .dealer)
        try dealer.connect(endpoint)
        for n in 0..<3 { try dealer.send(multipart: [Data(), Data("req \(n)".utf8)]) }
        for n in 0..<3 {
            let frames = try #require(try receive(router))
            #expect(frames.count == 3 && frames[1].isEmpty)
            #expect(frames[2] == Data("req \(n)".utf8))
            try router.send(multipart: [frames[0], Data(), Data("rep \(n)".utf8)])
        }
        for n in 0..<3 { #expect(try receive(dealer) == [Data(), Data("rep \(n)".utf8)]) }
    }

    @Test func subscriberPrefixIsByteExactAndUserIdsStayApart() throws {
        let publisher = try Socket(context, .pub)
        let endpoint = try publisher.bind("tcp://127.0.0.1:*")
        let subscriber = try Socket(context, .sub)
        try subscriber.subscribe("notify.u1.")
        try subscriber.connect(endpoint)

        // Slow joiner: publish a probe until the subscription has reached the publisher.
        try subscriber.setReceiveTimeout(milliseconds: 50)
        var joined = false
        for _ in 0..<100 where !joined {
            try publisher.send(multipart: [Data("notify.u1.probe".utf8), Data()])
            joined = try subscriber.receiveMultipart() != nil
        }
        #expect(joined)
        try publisher.send(multipart: [Data("notify.u10.workout".utf8), Data("{\"other\":1}".utf8)])
        try publisher.send(multipart: [Data("notify.u1.workout".utf8), Data("{\"mine\":1}".utf8)])
        let frames = try #require(try receive(subscriber))
        #expect(frames == [Data("notify.u1.workout".utf8), Data("{\"mine\":1}".utf8)])
        #expect(try receive(subscriber, within: 100) == nil)
    }

    /// Frames are received into buffers the socket reuses, grown while a long message's earlier
    /// frames are still open: every frame must read back intact, and so must the next message.
    @Test func borrowedFramesReadBackIntactAcrossBufferGrowth() throws {
        let pull = try Socket(context, .pull)
        let endpoint = try pull.bind("tcp://127.0.0.1:*")
        let push = try Socket(context, .push)
        try push.connect(endpoint)
        let long = (0..<9).map { index in
            index == 4 ? Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
                : index % 3 == 0 ? Data() : Data("frame \(index) ü".utf8)
        }
        try push.send(multipart: long)
        try push.send(multipart: [Data("after".utf8), Data()])
        try pull.setReceiveTimeout(milliseconds: 2000)

        #expect(try pull.withReceivedMultipart { frames in frames.map { Data($0) } } == long)
        let next = try pull.withReceivedMultipart { frames in (frames.count, Data(frames[0]), frames[1].count, frames.property("Peer-Address")) }
        #expect(next?.0 == 2 && next?.1 == Data("after".utf8) && next?.2 == 0)
        #expect(next?.3 == "127.0.0.1")

        var called = false
        #expect(try pull.withReceivedMultipart(dontWait: true) { _ in called = true } == nil)
        #expect(!called)
    }

    /// `receive()` takes one frame at a time, the rest of its message staying for the next call.
    @Test func singleFrameReceiveLeavesTheRestOfTheMessage() throws {
        let pull = try Socket(context, .pull)
        let endpoint = try pull.bind("tcp://127.0.0.1:*")
        let push = try Socket(context, .push)
        try push.connect(endpoint)
        try push.send(multipart: [Data("one".utf8), Data("two".utf8)])
        try pull.setReceiveTimeout(milliseconds: 2000)
        #expect(try pull.receive() == Data("one".utf8))
        #expect(try pull.receive() == Data("two".utf8))
        #expect(try pull.receive(dontWait: true) == nil)
    }

    @Test func pollReportsTheReadySocketAndTimesOut() throws {
        let pullA = try Socket(context, .pull)
        let pullB = try Socket(context, .pull)
        let endpointA = try pullA.bind("tcp://127.0.0.1:*")
        let endpointB = try pullB.bind("tcp://127.0.0.1:*")
        let push = try Socket(context, .push)
        try push.connect(endpointB)

        let started = Date()
        #expect(try Poller.readable([pullA, pullB], timeoutMilliseconds: 100) == [false, false])
        #expect(Date().timeIntervalSince(started) >= 0.09)

        try push.send("to b")
        #expect(try Poller.readable([pullA, pullB], timeoutMilliseconds: 2000) == [false, true])
        #expect(try pullB.receive(dontWait: true) == Data("to b".utf8))
        #expect(try pullA.receive(dontWait: true) == nil)
        _ = endpointA
    }

    /// libzmq signals a socket's descriptor only when commands reach it, so the poll must itself
    /// look for messages that arrived before the socket's last call (Poller).
    @Test func messagesThatArrivedBeforeTheLastCallAreStillReported() throws {
        let pull = try Socket(context, .pull)
        let endpoint = try pull.bind("tcp://127.0.0.1:*")
        let push = try Socket(context, .push)
        try push.connect(endpoint)
        try push.send("one")
        try push.send("two")
        #expect(try Poller.readable([pull], timeoutMilliseconds: 2000) == [true])
        Thread.sleep(forTimeInterval: 0.05)  // time for the second to arrive too: only a receive could show it has
        #expect(try Poller.readable([pull], timeoutMilliseconds: 0) == [true], "reported, not received: reported again")
        #expect(try pull.receive(dontWait: true) == Data("one".utf8))
        let started = Date()
        #expect(try Poller.readable([pull], timeoutMilliseconds: 2000) == [true], "the second, though nothing new came")
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(try pull.receive(dontWait: true) == Data("two".utf8))
        #expect(try Poller.readable([pull], timeoutMilliseconds: 50) == [false])

        // Then one sent while the poll waits, from a socket of another thread.
        let context = context
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)  // sent while the poll waits
            guard let later = try? Socket(context, .push, linger: 1000) else { return }
            try? later.connect(endpoint)
            try? later.send("three")
        }
        #expect(try Poller.readable([pull], timeoutMilliseconds: 5000) == [true])
        #expect(try pull.receive(dontWait: true) == Data("three".utf8))
    }

    /// A closed socket is refused, not polled through the descriptor number it had.
    @Test func pollingAClosedSocketIsAnError() throws {
        let pull = try Socket(context, .pull)
        _ = try pull.bind("tcp://127.0.0.1:*")
        #expect(try Poller.readable([pull], timeoutMilliseconds: 0) == [false])
        pull.close()
        #expect(throws: ZMQError.self) { try Poller.readable([pull], timeoutMilliseconds: 0) }
    }

    @Test func aWakeSignalFromAnotherThreadWakesThePollUntilCleared() throws {
        let pull = try Socket(context, .pull)
        _ = try pull.bind("tcp://127.0.0.1:*")
        let idle = try WakeSignal(), signal = try WakeSignal()
        #expect(try Poller.readable([pull], signals: [idle, signal], timeoutMilliseconds: 50) == [false, false, false])

        let started = Date()
        let givenTwice = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.05)  // given while the loop waits
            signal.signal()
            signal.signal()  // given twice before the loop looks: one wake-up, one clear
            givenTwice.signal()
        }
        #expect(try Poller.readable([pull], signals: [idle, signal], timeoutMilliseconds: 2000) == [false, false, true])
        #expect(Date().timeIntervalSince(started) < 1.5)
        givenTwice.wait()
        #expect(try Poller.readable([pull], signals: [idle, signal], timeoutMilliseconds: 0) == [false, false, true], "a signal stays given until cleared")
        signal.clear()
        #expect(try Poller.readable([pull], signals: [idle, signal], timeoutMilliseconds: 50) == [false, false, false])
        idle.clear()  // clearing a signal never given does not block
    }

    @Test func oversizedMessagesAreRefusedByMaxMessageSize() throws {
        let pull = try Socket(context, .pull)
        try pull.setMaxMessageSize(bytes: 1024)
        let endpoint = try pull.bind("tcp://127.0.0.1:*")
        let push = try Socket(context, .push)
        try push.connect(endpoint)
        try push.send(Data(count: 4096))
        #expect(try receive(pull, within: 300) == nil)
    }

    @Test func errorsCarryLibzmqMessage() throws {
        let socket = try Socket(context, .pub)
        #expect(throws: ZMQError.self) { try socket.bind("not-an-endpoint") }
        do {
            try socket.bind("tcp://127.0.0.1:notaport")
        } catch let error as ZMQError {
            #expect(!error.message.isEmpty)
        }
        socket.close()
        socket.close()  // closing twice is harmless: the handle is gone after the first
        #expect(throws: ZMQError.self) { try socket.send("after close") }
    }
}
