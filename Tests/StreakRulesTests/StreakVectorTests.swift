import Foundation
import LHTSchema
import StreakRules
import Testing

/// A fixed "today" so that "days ago" in the SEMANTICS §5 table is reproducible.
let vectorToday = LocalDay("2026-11-23")!
let testUser = UserID("u1")!

/// One row of the SEMANTICS §5 table under one policy.
struct StreakVector: Sendable, CustomTestStringConvertible {
    let row: String
    let policy: StreakPolicy
    /// Days ago (0 = today) → level; missing days have no entry.
    let daysAgo: [Int: NoAlcLevel]
    let streak: Int
    let jokers: Int

    var testDescription: String { "\(row) [\(policy)]" }

    var levels: [LocalDay: NoAlcLevel] {
        Dictionary(uniqueKeysWithValues: daysAgo.map { (vectorToday.adding(days: -$0.key), $0.value) })
    }
}

/// `days` (a range of days ago, written high…low as the table does) all at `level`.
func history(_ parts: (ClosedRange<Int>, NoAlcLevel)...) -> [Int: NoAlcLevel] {
    var result: [Int: NoAlcLevel] = [:]
    for (range, level) in parts { for day in range { result[day] = level } }
    return result
}

/// A row that holds for both policies.
func both(_ row: String, _ daysAgo: [Int: NoAlcLevel], streak: Int, jokers: Int) -> [StreakVector] {
    StreakPolicy.allCases.map { StreakVector(row: row, policy: $0, daysAgo: daysAgo, streak: streak, jokers: jokers) }
}

func only(_ policy: StreakPolicy, _ row: String, _ daysAgo: [Int: NoAlcLevel], streak: Int, jokers: Int) -> StreakVector {
    StreakVector(row: row, policy: policy, daysAgo: daysAgo, streak: streak, jokers: jokers)
}

/// Every row of SEMANTICS §5, expanded per policy.
let streakVectors: [StreakVector] = [
    both("6…0 steady", history((0...6, .steady)), streak: 7, jokers: 1),
    both("1 steady, 0 easy", history((1...1, .steady), (0...0, .easy)), streak: 0, jokers: 0),
    both("1 steady, 0 wild", history((1...1, .steady), (0...0, .wild)), streak: 0, jokers: 0),
    both("7…1 steady, 0 easy", history((1...7, .steady), (0...0, .easy)), streak: 8, jokers: 0),
    [
        only(.seed, "7…1 steady, 0 wild", history((1...7, .steady), (0...0, .wild)), streak: 0, jokers: 0),
        only(.classic, "7…1 steady, 0 wild", history((1...7, .steady), (0...0, .wild)), streak: 8, jokers: 0),
    ],
    both("2 steady, 0 steady (1 missing)", history((2...2, .steady), (0...0, .steady)), streak: 1, jokers: 0),
    both("8…2 steady, 0 steady (1 missing)", history((2...8, .steady), (0...0, .steady)), streak: 9, jokers: 0),
    both("16…3 steady, 0 steady (2, 1 missing)", history((3...16, .steady), (0...0, .steady)), streak: 17, jokers: 0),
    both("9…3 steady, 0 steady (2, 1 missing)", history((3...9, .steady), (0...0, .steady)), streak: 1, jokers: 0),
    both("27…0 steady", history((0...27, .steady)), streak: 28, jokers: 3),
    both("30…10 steady, 9…7 easy, 6…0 steady", history((10...30, .steady), (7...9, .easy), (0...6, .steady)), streak: 31, jokers: 1),
    both("6…1 steady, 0 easy", history((1...6, .steady), (0...0, .easy)), streak: 7, jokers: 0),
    both("1 steady (today unlogged)", history((1...1, .steady)), streak: 1, jokers: 0),
    both("1, 0 steady", history((0...1, .steady)), streak: 2, jokers: 0),
    both("nothing", [:], streak: 0, jokers: 0),
    both("0 steady", history((0...0, .steady)), streak: 1, jokers: 0),
    [
        only(.seed, "21…1 steady, 0 wild", history((1...21, .steady), (0...0, .wild)), streak: 0, jokers: 2),
        only(.classic, "21…1 steady, 0 wild", history((1...21, .steady), (0...0, .wild)), streak: 22, jokers: 2),
    ],
    [
        only(.seed, "21…2 steady, 1 wild, 0 unlogged", history((2...21, .steady), (1...1, .wild)), streak: 0, jokers: 1),
        only(.classic, "21…2 steady, 1 wild, 0 unlogged", history((2...21, .steady), (1...1, .wild)), streak: 21, jokers: 2),
    ],
].flatMap { $0 }

@Suite("SEMANTICS §5 vectors")
struct StreakVectorTests {
    @Test("the table has every row under every policy it names")
    func tableIsComplete() {
        #expect(Set(streakVectors.map(\.row)).count == 18)
        #expect(streakVectors.count == 36)
    }

    @Test(arguments: streakVectors)
    func vector(_ vector: StreakVector) {
        let result = Streak.compute(user: testUser, levels: vector.levels, today: vectorToday, policy: vector.policy)
        #expect(result.streakDays == vector.streak)
        #expect(result.rewardsAvailable == vector.jokers)
        #expect(result.rewardsAvailable == result.rewardsEarned - result.rewardsUsed - result.rewardsLost)

        let sorted = vector.levels.sorted { $0.key < $1.key }.map { (day: $0.key, level: $0.value) }
        #expect(Streak.compute(user: testUser, sortedLevels: sorted, today: vectorToday, policy: vector.policy) == result)
    }
}

@Suite("Streak details")
struct StreakDetailTests {
    func compute(_ daysAgo: [Int: NoAlcLevel], _ policy: StreakPolicy = .seed, today: LocalDay = vectorToday) -> StreakState {
        let levels = Dictionary(uniqueKeysWithValues: daysAgo.map { (vectorToday.adding(days: -$0.key), $0.value) })
        return Streak.compute(user: testUser, levels: levels, today: today, policy: policy)
    }

    @Test func nothingLoggedIsTheEmptyState() {
        let empty = Streak.nothingLogged(user: testUser, today: vectorToday, policy: .seed)
        #expect(compute([:]) == empty)
        #expect(empty.lastLoggedDay == nil && empty.endDay == nil)
    }

    @Test func endDayIsTodayOnlyWhenTodayIsLogged() {
        let logged = compute(history((0...2, .steady)))
        #expect(logged.todayLogged && logged.endDay == vectorToday && logged.lastLoggedDay == vectorToday)
        let unlogged = compute(history((1...2, .steady)))
        #expect(!unlogged.todayLogged)
        #expect(unlogged.endDay == vectorToday.adding(days: -1))
        #expect(unlogged.lastLoggedDay == vectorToday.adding(days: -1))
    }

    @Test("an unlogged past day before yesterday counts; lastLoggedDay is older than endDay")
    func endDayAfterLastLoggedDay() {
        let result = compute(history((5...5, .steady)))
        #expect(result.lastLoggedDay == vectorToday.adding(days: -5))
        #expect(result.endDay == vectorToday.adding(days: -1))
        #expect(result.streakDays == 0)
    }

    @Test("entries after today are ignored (asOf)")
    func asOfIgnoresLaterEntries() {
        let levels = history((0...10, .steady))
        let asOf = vectorToday.adding(days: -4)
        let result = compute(levels, today: asOf)
        #expect(result.streakDays == 7)
        #expect(result.rewardsEarned == 1)
        #expect(result.todayLogged && result.endDay == asOf && result.lastLoggedDay == asOf)
        // Only future entries: nothing counted yet.
        #expect(compute(history((0...3, .steady)), today: vectorToday.adding(days: -4))
            == Streak.nothingLogged(user: testUser, today: vectorToday.adding(days: -4), policy: .seed))
    }

    @Test("a milestone at three jokers is lost, not earned")
    func milestoneAtCapIsNotCounted() {
        let result = compute(history((0...27, .steady)))
        #expect(result.rewardsEarned == 3 && result.rewardsAvailable == 3)
    }

    @Test("seed: a wild day costs one joker as a penalty; jokers otherwise survive the break")
    func seedWildPenalty() {
        let result = compute(history((1...21, .steady), (0...0, .wild)), .seed)
        #expect(result.rewardsEarned == 3 && result.rewardsLost == 1 && result.rewardsUsed == 0)
        // The two left heal later easy days of a new streak.
        let later = Streak.compute(
            user: testUser, levels: Dictionary(uniqueKeysWithValues: history((3...24, .steady), (2...2, .wild), (1...1, .steady), (0...0, .easy))
                .map { (vectorToday.adding(days: -$0.key), $0.value) }),
            today: vectorToday, policy: .seed)
        #expect(later.streakDays == 2 && later.rewardsAvailable == 1 && later.rewardsUsed == 1)
    }

    @Test("seed: wild with no joker on hand takes nothing")
    func seedWildWithoutJoker() {
        let result = compute(history((1...3, .steady), (0...0, .wild)), .seed)
        #expect(result.rewardsLost == 0 && result.rewardsAvailable == 0 && result.streakDays == 0)
    }

    @Test("easy on a zero streak spends no joker (nothing to heal)")
    func easyOnZeroStreakKeepsJokers() {
        // 21 steady → 3 jokers; wild → 0 streak, 2 jokers; easy on a zero streak: still 2.
        let result = compute(history((2...22, .steady), (1...1, .wild), (0...0, .easy)), .seed)
        #expect(result.streakDays == 0 && result.rewardsAvailable == 2 && result.rewardsUsed == 0)
    }

    @Test("classic: a break wipes jokers, earned and used")
    func classicBreakResets() {
        // 7 steady (1 joker), easy healed (used 1), 6 steady → 14 (earned 2), then two easy: heal, break.
        let result = compute(history((9...15, .steady), (8...8, .easy), (2...7, .steady), (0...1, .easy)), .classic)
        #expect(result.streakDays == 0)
        #expect(result.rewardsEarned == 0 && result.rewardsUsed == 0 && result.rewardsLost == 0 && result.rewardsAvailable == 0)
        let seed = compute(history((9...15, .steady), (8...8, .easy), (2...7, .steady), (0...1, .easy)), .seed)
        #expect(seed.streakDays == 0 && seed.rewardsEarned == 2 && seed.rewardsUsed == 2 && seed.rewardsAvailable == 0)
    }

    @Test("sorted input: a repeated day takes the later element; unsorted input still works")
    func sortedInputForms() {
        let d = { vectorToday.adding(days: -$0) }
        let repeated: [(day: LocalDay, level: NoAlcLevel)] = [(d(2), .steady), (d(1), .wild), (d(1), .steady), (d(0), .steady)]
        #expect(Streak.compute(user: testUser, sortedLevels: repeated, today: vectorToday, policy: .seed).streakDays == 3)
        let unsorted: [(day: LocalDay, level: NoAlcLevel)] = [(d(0), .steady), (d(2), .steady), (d(1), .wild), (d(1), .steady)]
        #expect(Streak.compute(user: testUser, sortedLevels: unsorted, today: vectorToday, policy: .seed).streakDays == 3)
        let withFuture: [(day: LocalDay, level: NoAlcLevel)] = [(d(1), .steady), (d(-1), .wild)]
        let result = Streak.compute(user: testUser, sortedLevels: withFuture, today: vectorToday, policy: .seed)
        #expect(result.streakDays == 1 && !result.todayLogged)
        #expect(Streak.compute(user: testUser, sortedLevels: [], today: vectorToday, policy: .seed) == Streak.nothingLogged(user: testUser, today: vectorToday, policy: .seed))
    }

    @Test("ten years of daily entries")
    func tenYears() {
        let start = vectorToday.adding(days: -3651)
        var levels: [LocalDay: NoAlcLevel] = [:]
        for offset in 0...3651 { levels[start.adding(days: offset)] = offset % 30 == 29 ? .easy : .steady }
        let clock = ContinuousClock()
        var result = Streak.nothingLogged(user: testUser, today: vectorToday, policy: .seed)
        let elapsed = clock.measure { result = Streak.compute(user: testUser, levels: levels, today: vectorToday, policy: .seed) }
        #expect(result.streakDays == 3652)
        #expect(result.rewardsAvailable == 3)
        // Generous even for a debug build on a loaded machine.
        #expect(elapsed < .milliseconds(200))
    }

    @Test func encodesWithExplicitNulls() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(Streak.nothingLogged(user: testUser, today: vectorToday, policy: .classic)), as: UTF8.self)
        #expect(json == #"{"asOf":"2026-11-23","lastLoggedDay":null,"policy":"classic","rewardsAvailable":0,"rewardsEarned":0,"rewardsLost":0,"rewardsUsed":0,"streakDays":0,"todayLogged":false,"userId":"u1"}"#)
        let full = compute(history((0...6, .steady)))
        #expect(try JSONDecoder().decode(StreakState.self, from: encoder.encode(full)) == full)
        #expect(StreakPolicy(rawValue: "classic") == .classic && StreakPolicy(rawValue: "Seed") == nil)
    }
}
