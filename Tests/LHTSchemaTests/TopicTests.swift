import Foundation
import Testing
@testable import LHTSchema

@Suite("Topics")
struct TopicTests {
    @Test func buildAndParse() throws {
        let topic = try #require(Topic("reminder.due.henning.workout"))
        #expect(topic.type == "reminder.due")
        #expect(topic.userId == UserID("henning"))
        #expect(topic.activity == .workout)
        #expect(topic.description == "reminder.due.henning.workout")
        #expect(Topic(type: "reminder.due", userId: UserID("henning")!, activity: .workout) == topic)

        for text in ["session.logged.u1.mindfulness", "noalc.logged.u1.noalc", "notify.u1.workout", "streak.updated.henning.noalc",
                     "reminder.changed.A-b_9.noalc"] {
            #expect(Topic(text)?.description == text, "\(text)")
        }
        #expect(Topic("notify.u1.workout")?.type == "notify")
        #expect(Topic("streak.updated.henning.noalc")?.type == "streak.updated")
    }

    @Test(arguments: [
        "", "henning.workout", "workout", ".henning.workout", "reminder..henning.workout", "reminder.due..workout",
        "reminder.due.henning.", "reminder.due.henning.running", "reminder.due.hen ning.workout", "reminder.due.henning.Workout",
        "reminder.due.j\u{FC}rgen.workout", "reminder.due.henning.workout.", "..", "...",
    ])
    func malformedTopicsAreRejected(text: String) {
        #expect(Topic(text) == nil, "\(text.debugDescription) parsed as \(String(describing: Topic(text)))")
    }

    @Test func userPrefixesDoNotMatchOtherUsers() throws {
        let u1 = try #require(UserID("u1"))
        let u10 = try #require(UserID("u10"))
        let prefix = Topic.prefix(type: "notify", userId: u1)
        #expect(prefix == "notify.u1.")
        #expect(!Topic(type: "notify", userId: u10, activity: .workout).description.hasPrefix(prefix))
        #expect(Topic(type: "notify", userId: u1, activity: .workout).description.hasPrefix(prefix))
        #expect(Topic(type: "reminder.due", userId: u1, activity: .noalc).description.hasPrefix(Topic.prefix(type: "reminder.due", userId: u1)))
        #expect(!Topic(type: "reminder.due", userId: u10, activity: .noalc).description.hasPrefix(Topic.prefix(type: "reminder.due", userId: u1)))
        // The byte-level prefix match ZeroMQ does.
        let topicBytes = Array(Topic(type: "notify", userId: u10, activity: .mindfulness).description.utf8)
        #expect(!topicBytes.starts(with: Array(prefix.utf8)))
    }
}
