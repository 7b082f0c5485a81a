import LHTSchema
import StreakRules
import Testing
import TestSupport

/// A random history ending near `today`: mostly steady (so jokers reach the cap), with easy,
/// wild and unlogged days, sometimes entries after today, sometimes nothing at all.
func randomHistory(_ rng: inout SplitMix64, today: LocalDay) -> [LocalDay: NoAlcLevel] {
    let span = Int.random(in: 0...120, using: &rng)
    let start = today.adding(days: -span + Int.random(in: -2...3, using: &rng))
    let steadyWeight = Int.random(in: 50...95, using: &rng)
    var levels: [LocalDay: NoAlcLevel] = [:]
    for offset in 0..<span {
        let roll = Int.random(in: 0..<100, using: &rng)
        let level: NoAlcLevel?
        if roll < steadyWeight {
            level = .steady
        } else {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: level = nil
            case 1: level = .wild
            default: level = .easy
            }
        }
        if let level { levels[start.adding(days: offset)] = level }
    }
    return levels
}

let propertyToday = LocalDay("2026-11-23")!
let propertyRuns = 3000

@Suite("Streak properties (SplitMix64, fixed seeds)")
struct StreakPropertyTests {
    @Test(arguments: StreakPolicy.allCases)
    func jokersStayWithinBoundsAndCountersAddUp(policy: StreakPolicy) {
        var rng = SplitMix64(seed: 0x5EED_0001)
        var sawCap = false
        for _ in 0..<propertyRuns {
            let result = Streak.compute(user: testUser, levels: randomHistory(&rng, today: propertyToday), today: propertyToday, policy: policy)
            #expect((0...3).contains(result.rewardsAvailable))
            #expect(result.rewardsAvailable == result.rewardsEarned - result.rewardsUsed - result.rewardsLost)
            #expect(result.streakDays >= 0 && result.rewardsUsed >= 0 && result.rewardsLost >= 0)
            if policy == .classic { #expect(result.rewardsLost == 0) }
            sawCap = sawCap || result.rewardsAvailable == 3
        }
        #expect(sawCap, "the generator should reach the joker cap sometimes")
    }

    @Test("a steady day right after the end day adds exactly one to the streak", arguments: StreakPolicy.allCases)
    func appendingSteadyNeverLowersTheStreak(policy: StreakPolicy) {
        var rng = SplitMix64(seed: 0x5EED_0002)
        for _ in 0..<propertyRuns {
            var levels = randomHistory(&rng, today: propertyToday)
            let before = Streak.compute(user: testUser, levels: levels, today: propertyToday, policy: policy)
            // The day after the counted end (today when today was unlogged), so no gap is created.
            let next = before.endDay.map { $0.adding(days: 1) } ?? propertyToday
            levels = levels.filter { $0.key < next }
            levels[next] = .steady
            let after = Streak.compute(user: testUser, levels: levels, today: next, policy: policy)
            #expect(after.streakDays >= before.streakDays)
            #expect(after.streakDays == before.streakDays + 1)
            #expect(after.rewardsAvailable >= before.rewardsAvailable)
        }
    }

    @Test("the result depends only on the day→level map", arguments: StreakPolicy.allCases)
    func insertionOrderDoesNotMatter(policy: StreakPolicy) {
        var rng = SplitMix64(seed: 0x5EED_0003)
        for _ in 0..<propertyRuns {
            let pairs = Array(randomHistory(&rng, today: propertyToday))
            let reference = Streak.compute(
                user: testUser, levels: Dictionary(uniqueKeysWithValues: pairs), today: propertyToday, policy: policy)
            for _ in 0..<2 {
                var shuffled = pairs
                shuffled.shuffle(using: &rng)
                var levels: [LocalDay: NoAlcLevel] = [:]
                for (day, level) in shuffled { levels[day] = level }
                #expect(Streak.compute(user: testUser, levels: levels, today: propertyToday, policy: policy) == reference)
            }
            let sorted = pairs.sorted { $0.key < $1.key }.map { (day: $0.key, level: $0.value) }
            #expect(Streak.compute(user: testUser, sortedLevels: sorted, today: propertyToday, policy: policy) == reference)
        }
    }

    @Test("entries after today change nothing", arguments: StreakPolicy.allCases)
    func futureEntriesAreIgnored(policy: StreakPolicy) {
        var rng = SplitMix64(seed: 0x5EED_0004)
        for _ in 0..<propertyRuns {
            let levels = randomHistory(&rng, today: propertyToday)
            let asOf = propertyToday.adding(days: -Int.random(in: 0...30, using: &rng))
            #expect(Streak.compute(user: testUser, levels: levels, today: asOf, policy: policy)
                == Streak.compute(user: testUser, levels: levels.filter { $0.key <= asOf }, today: asOf, policy: policy))
        }
    }

    @Test("without wild days both policies agree on streak and jokers")
    func policiesAgreeWithoutWild() {
        var rng = SplitMix64(seed: 0x5EED_0005)
        for _ in 0..<propertyRuns {
            let levels = randomHistory(&rng, today: propertyToday).filter { $0.value != .wild }
            let seed = Streak.compute(user: testUser, levels: levels, today: propertyToday, policy: .seed)
            let classic = Streak.compute(user: testUser, levels: levels, today: propertyToday, policy: .classic)
            #expect(seed.streakDays == classic.streakDays)
            #expect(seed.rewardsAvailable == classic.rewardsAvailable)
        }
    }
}
