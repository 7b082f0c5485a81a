import Foundation
import Testing
@testable import ServiceHost

/// A turn's replies leave in request order, once the turn is on disk and its reads are answered.
@Suite struct OrderedRepliesTests {
    @Test func repliesLeaveInOrderOnceDurableAndAnswered() {
        var sent: [Int] = []
        let replies = OrderedReplies(count: 5) { index, frame in
            #expect(frame == Data("\(index)".utf8))
            sent.append(index)
        }
        // Index 1 is a read answered later; 3 went another way (a deferred request, `health`).
        replies.expect(1)
        for index in [0, 2, 4] { replies.fill(index, Data("\(index)".utf8)) }
        replies.becameDurable()
        #expect(sent.isEmpty)
        replies.fill(1, Data("1".utf8), expected: true)
        #expect(sent == [0, 1, 2, 4])
        replies.fill(1, Data("1".utf8), expected: true)
        #expect(sent == [0, 1, 2, 4])
    }

    @Test func answersBeforeTheSyncWaitForIt() {
        var sent: [Int] = []
        let replies = OrderedReplies(count: 2) { index, _ in sent.append(index) }
        replies.expect(0)
        replies.fill(1, Data("1".utf8))
        replies.fill(0, Data("0".utf8), expected: true)
        #expect(sent.isEmpty)
        replies.becameDurable()
        #expect(sent == [0, 1])
    }
}
