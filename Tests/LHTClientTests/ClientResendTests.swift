import Foundation
import LHTClient
import LHTSchema
import Synchronization
import Testing
import TestSupport
import ZeroMQ

/// LHTClient's `ServiceClient` over real TCP against stand-in instances that answer or stay silent:
/// a request one instance left unanswered goes to the next only when repeating it is safe (`Resend`),
/// or when it provably never reached the first.
@Suite struct ClientResendTests {
    static let timeout = 300

    @Test func aRequestUnsafeToRepeatIsNotSentToAnotherInstanceOnceItReachedOne() throws {
        let (silent, answering) = (try StandInInstance(answers: false), try StandInInstance(answers: true))
        let client = ServiceClient(context: try Context(), endpoints: [silent.endpoint, answering.endpoint])
        let frame = try ServiceClient.requestFrame(Ops.reminderTest, ReminderTestRequest(reminderId: RecordID()))
        #expect(client.exchange(frame, timeoutMilliseconds: Self.timeout) == nil)
        #expect(client.lastCall == .mayHaveBeenDone(endpoint: silent.endpoint))
        #expect(silent.received.count == 1)
        #expect(answering.received.isEmpty)
        // The typed call says so: `unavailable`, naming the instance and the unknown outcome.
        #expect(throws: ServiceClient.mayHaveBeenDone(Ops.clockAdvance, at: answering.endpoint, timeoutMilliseconds: Self.timeout)) {
            // The client moved on to the answering instance; make it silent from now on.
            answering.silence()
            _ = try ServiceClient(context: try Context(), endpoints: [answering.endpoint, silent.endpoint])
                .call(Ops.clockAdvance, ClockAdvanceRequest(seconds: 60), timeoutMilliseconds: Self.timeout)
        }
        #expect(silent.received.count == 1)
    }

    @Test func aRequestUnsafeToRepeatGoesToTheNextInstanceWhenItNeverLeft() throws {
        let answering = try StandInInstance(answers: true)
        let nobody = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        let client = ServiceClient(context: try Context(), endpoints: [nobody, answering.endpoint])
        let frame = try ServiceClient.requestFrame(Ops.reminderTest, ReminderTestRequest(reminderId: RecordID()))
        #expect(client.exchange(frame, timeoutMilliseconds: Self.timeout) != nil)
        #expect(client.lastCall == .answered(tries: 2))
        #expect(answering.received.count == 1)
    }

    @Test func aCreateGetsTheClientsIdAndGoesToTheNextInstanceWithIt() throws {
        let (silent, answering) = (try StandInInstance(answers: false), try StandInInstance(answers: true))
        let client = ServiceClient(context: try Context(), endpoints: [silent.endpoint, answering.endpoint])
        let put = ReminderPutRequest(userId: UserID("rita")!, activity: .workout)
        #expect(client.exchange(try ServiceClient.requestFrame(Ops.reminderPut, put), timeoutMilliseconds: Self.timeout) != nil)
        #expect(client.lastCall == .answered(tries: 2))
        let ids = (silent.received + answering.received).map { try? JSONDecoder().decode(JSONValue.self, from: $0)["data"]?["id"]?.stringValue }
        #expect(ids.count == 2 && ids[0] != nil && ids[0] == ids[1], "\(ids)")
        // A UUID v7 (RFC 9562): its version digit is 7.
        #expect(ids[0]?.dropFirst(14).first == "7", "\(ids)")
    }

    /// Every op of the catalog has a considered rule: only these three are unsafe to repeat with
    /// their id (a new op lands here until someone decides).
    @Test func onlyTestFiringsAndClockMovesAreUnsafeToRepeat() {
        let unsafe = Ops.all.filter { Resend.of(op: $0.name, carriesID: true) == .onlyIfNeverSent }.map(\.name)
        #expect(Set(unsafe) == ["reminder.test", "clock.set", "clock.advance"])
        for create in ["session.log", "noalc.log", "reminder.put"] {
            #expect(Resend.of(op: create, carriesID: false) == .onlyIfNeverSent)
        }
        #expect(Resend.of(requestFrame: Data(#"{"v":1,"op":"reminder.put","data":{"id":"0192c1a0-0000-7000-8000-000000000000"}}"#.utf8)) == .anyInstance)
        #expect(Resend.of(requestFrame: Data(#"{"v":1,"op":"reminder.put","data":{"userId":"rita"}}"#.utf8)) == .onlyIfNeverSent)
        #expect(Resend.of(requestFrame: Data("not json".utf8)) == .onlyIfNeverSent)
    }
}

/// One instance of a service as a client sees it: a ROUTER on a loopback port, on a thread of its
/// own, that keeps every request it gets and answers `{"ok":true,"data":{}}`, or nothing once silenced.
private final class StandInInstance {
    let endpoint: String
    private let state = State()

    private final class State: Sendable {
        let requests = Mutex<[Data]>([])
        let answering = Atomic<Bool>(true)
        let stopped = Atomic<Bool>(false)
        let bound = Mutex<Result<String, HarnessError>?>(nil)
    }

    var received: [Data] { state.requests.withLock { $0 } }

    func silence() { state.answering.store(false, ordering: .relaxed) }

    init(answers: Bool) throws {
        let state = state
        state.answering.store(answers, ordering: .relaxed)
        Thread.detachNewThread { Self.serve(state) }
        var bound: Result<String, HarnessError>?
        try waitUntil(timeout: 5, interval: 0.01, "the stand-in bound its socket") {
            bound = state.bound.withLock { $0 }
            return bound != nil
        }
        endpoint = try bound!.get()
    }

    deinit { state.stopped.store(true, ordering: .relaxed) }

    private static func serve(_ state: State) {
        let context: Context, socket: Socket
        do {
            context = try Context()
            socket = try Socket(context, .router)
            let endpoint = try socket.bind("tcp://127.0.0.1:*")
            state.bound.withLock { $0 = .success(endpoint) }
        } catch {
            state.bound.withLock { $0 = .failure(HarnessError("the stand-in cannot bind: \(error)")) }
            return
        }
        let reply = Data(#"{"v":1,"ok":true,"data":{}}"#.utf8)
        while !state.stopped.load(ordering: .relaxed) {
            guard (try? Poller.readable([socket], timeoutMilliseconds: 50))?.first == true,
                  let frames = try? socket.receiveMultipart(dontWait: true), frames.count >= 2 else { continue }
            state.requests.withLock { $0.append(frames.last!) }
            if state.answering.load(ordering: .relaxed) { _ = try? socket.send(multipart: Array(frames.dropLast()) + [reply]) }
        }
        socket.close()
        withExtendedLifetime(context) {}
    }
}
