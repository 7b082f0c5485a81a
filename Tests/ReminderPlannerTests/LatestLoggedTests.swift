import LHTSchema
@testable import ReminderPlanner
import Testing

/// `LatestLogged` answers "may something stored cover an occurrence from here on?" for the
/// coverage query it spares. It may say yes wrongly (the query then finds nothing that covers), never no wrongly.
@Suite struct LatestLoggedTests {
    @Test func aSessionsEndBoundsItsActivityOnlyAndNeverFalls() {
        var latest = LatestLogged()
        #expect(!latest.maySessionEnd(.mindfulness, atOrAfter: -1_000_000), "nothing logged yet")
        latest.logged(sessionOf: .mindfulness, endingAt: 1000)
        #expect(latest.maySessionEnd(.mindfulness, atOrAfter: 1000), "a session ending exactly as the window opens may cover")
        #expect(!latest.maySessionEnd(.mindfulness, atOrAfter: 1001))
        #expect(!latest.maySessionEnd(.workout, atOrAfter: 0), "another activity's sessions are another bound")
        // A later event that ended earlier (or one replacing it from an earlier history) keeps the bound.
        latest.logged(sessionOf: .mindfulness, endingAt: 10)
        #expect(latest.maySessionEnd(.mindfulness, atOrAfter: 1000))
        latest.logged(sessionOf: .workout, endingAt: 2000)
        latest.logged(sessionOf: .workout, endingAt: 1500)
        #expect(latest.maySessionEnd(.workout, atOrAfter: 2000) && !latest.maySessionEnd(.workout, atOrAfter: 2001))
        latest.logged(sessionOf: .noalc, endingAt: 5000)
        #expect(latest.maySessionEnd(.noalc, atOrAfter: .max), "nothing is known of NoAlc entries: they are always asked for")
        #expect(!latest.maySessionEnd(.workout, atOrAfter: 5000))
    }
}
