import Foundation
import Synchronization
import Testing
import TestSupport
@testable import ServiceHost

/// One producer thread, one consumer: order kept, at most `waitingLimit` items waiting, the
/// producer's error after its items, and a consumer that stops lets a blocked producer go.
@Suite struct HandOffTests {
    struct Failure: Error, Equatable {}

    @Test func itemsArriveInOrderThenTheEnd() throws {
        let pipe = HandOff<Int>(waitingLimit: 3)
        Thread {
            for item in 0..<100 { pipe.put(item) }
            pipe.finish(.success(()))
        }.start()
        var received: [Int] = []
        while let item = try pipe.take() { received.append(item) }
        #expect(received == Array(0..<100))
        #expect(try pipe.take() == nil)
    }

    @Test func theProducersErrorComesAfterItsItems() throws {
        let pipe = HandOff<Int>(waitingLimit: 3)
        pipe.put(1)
        pipe.put(2)
        pipe.finish(.failure(Failure()))
        #expect(try pipe.take() == 1)
        #expect(try pipe.take() == 2)
        #expect(throws: Failure.self) { try pipe.take() }
    }

    @Test func aProducerWaitsAtTheLimitAndStopsWhenTheConsumerCancels() throws {
        let pipe = HandOff<Int>(waitingLimit: 2)
        let put = Atomic<Int>(0)
        let refused = DispatchSemaphore(value: 0)
        Thread {
            var item = 0
            while pipe.put(item) {
                put.add(1, ordering: .relaxed)
                item += 1
            }
            refused.signal()
        }.start()
        try waitUntil("the producer filled the limit") { put.load(ordering: .relaxed) == 2 }
        // Given the time to run past the limit, it has not.
        Thread.sleep(forTimeInterval: 0.2)  // time for what must not happen
        #expect(put.load(ordering: .relaxed) == 2, "the producer ran past the limit")
        #expect(try pipe.take() == 0)
        try waitUntil("taking one let one more in") { put.load(ordering: .relaxed) == 3 }
        pipe.cancel()
        #expect(refused.wait(timeout: .now() + 5) == .success, "the blocked producer was not released")
    }
}
