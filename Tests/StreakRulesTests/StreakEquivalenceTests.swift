import Foundation
import LHTSchema
import StreakRules
import Testing
import TestSupport

/// A random history built for gaps: runs of logged days (mostly steady, so jokers pile up) separated
/// by unlogged runs from 1 day to many years, so every way a gap can meet a streak and jokers occurs.
func gappyHistory(_ rng: inout SplitMix64, today: LocalDay) -> [LocalDay: NoAlcLevel] {
    var levels: [LocalDay: NoAlcLevel] = [:]
    var day = today.adding(days: -rng.below(8_000) - 1)
    let runs = rng.below(12)
    let gaps = [1, 1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 20, 30, 365, 4000]
    for _ in 0..<runs {
        let length = rng.below(40)
        let steadyPercent = 50 + rng.below(50)
        for _ in 0..<length {
            if rng.below(100) < steadyPercent {
                levels[day] = .steady
            } else {
                switch rng.below(4) {
                case 0: break  // a single unlogged day inside the run
                case 1: levels[day] = .wild
                default: levels[day] = .easy
                }
            }
            day = day.adding(days: 1)
        }
        day = day.adding(days: rng.pick(gaps) + rng.below(3))
    }
    return levels
}

@Suite("Streak: skipping unlogged runs equals the day-by-day walk")
struct StreakEquivalenceTests {
    @Test("random gappy histories, random asOf, both input forms", arguments: StreakPolicy.allCases)
    func matchesTheDayByDayReference(policy: StreakPolicy) {
        var rng = SplitMix64(seed: 0x5EED_00E0 &+ UInt64(policy == .seed ? 0 : 1))
        for run in 0..<2000 {
            let levels = run.isMultiple(of: 2) ? gappyHistory(&rng, today: propertyToday) : randomHistory(&rng, today: propertyToday)
            // asOf: today, inside the history, or far after it (a long unlogged tail).
            let asOf: LocalDay = switch rng.below(3) {
            case 0: propertyToday
            case 1: levels.isEmpty ? propertyToday : levels.keys.sorted()[rng.below(levels.count)].adding(days: rng.below(3) - 1)
            default: propertyToday.adding(days: rng.below(3_000))
            }
            let expected = ReferenceStreak.compute(user: testUser, levels: levels, today: asOf, policy: policy)
            let byMap = Streak.compute(user: testUser, levels: levels, today: asOf, policy: policy)
            let sorted = levels.sorted { $0.key < $1.key }.map { (day: $0.key, level: $0.value) }
            let bySorted = Streak.compute(user: testUser, sortedLevels: sorted, today: asOf, policy: policy)
            #expect(byMap == expected, "run \(run)")
            #expect(bySorted == expected, "run \(run)")
            if byMap != expected || bySorted != expected { return }
        }
    }

    @Test("progress fed one entry at a time (repeats, earlier days) equals computing from scratch", arguments: StreakPolicy.allCases)
    func incrementalProgressMatchesComputingFromScratch(policy: StreakPolicy) {
        var rng = SplitMix64(seed: 0x5EED_0A0D &+ UInt64(policy == .seed ? 0 : 1))
        let levels: [NoAlcLevel] = [.steady, .easy, .wild]
        for run in 0..<300 {
            // Mostly in day order, as entries arrive; sometimes the same day again, sometimes an earlier one.
            var arrivals = gappyHistory(&rng, today: propertyToday).sorted { $0.key < $1.key }.map { (day: $0.key, level: $0.value) }
            for index in arrivals.indices.reversed() where rng.below(10) == 0 {
                arrivals.insert((arrivals[index].day, rng.pick(levels)), at: index + 1)
            }
            for index in arrivals.indices.dropFirst() where rng.below(20) == 0 { arrivals.swapAt(index - 1, index) }
            var progress = StreakProgress(policy: policy)
            var logged: [LocalDay: NoAlcLevel] = [:]
            for (day, level) in arrivals {
                logged[day] = level
                if !progress.record(level, on: day) {
                    #expect(day < progress.lastDay!, "run \(run)")
                    let sorted = logged.sorted { $0.key < $1.key }.map { (day: $0.key, level: $0.value) }
                    progress = StreakProgress(policy: policy, sortedLevels: sorted)
                }
                let last = progress.lastDay!
                for asOf in [last, last.adding(days: 1 + rng.below(20))] {
                    let expected = Streak.compute(user: testUser, levels: logged, today: asOf, policy: policy)
                    #expect(progress.state(user: testUser, asOf: asOf) == expected, "run \(run)")
                    if progress.state(user: testUser, asOf: asOf) != expected { return }
                }
                #expect(progress.state(user: testUser, asOf: last.adding(days: -1)) == nil)
            }
        }
    }

    @Test("every §5 vector and every short history agrees with the reference", arguments: StreakPolicy.allCases)
    func exhaustiveShortHistories(policy: StreakPolicy) {
        // Every history of 7 days over {steady, easy, wild, unlogged} followed by a gap of 0…10 days
        // and a final steady or unlogged day: 4^7 × 11 × 2 cases, the gap lengths around a week.
        let options: [NoAlcLevel?] = [.steady, .easy, .wild, nil]
        let start = LocalDay("2026-01-01")!
        for code in 0..<(1 << 14) {
            var levels: [LocalDay: NoAlcLevel] = [:]
            for index in 0..<7 {
                if let level = options[(code >> (2 * index)) & 3] { levels[start.adding(days: index)] = level }
            }
            for gap in 0...10 {
                for tail: NoAlcLevel? in [.steady, nil] {
                    var history = levels
                    let today = start.adding(days: 7 + gap)
                    if let tail { history[today] = tail }
                    let expected = ReferenceStreak.compute(user: testUser, levels: history, today: today, policy: policy)
                    let actual = Streak.compute(user: testUser, levels: history, today: today, policy: policy)
                    if actual != expected {
                        #expect(actual == expected, "code \(code) gap \(gap) tail \(String(describing: tail))")
                        return
                    }
                }
            }
        }
    }

    /// The cost grows with the logged days, not with the calendar span (the red-team case: 300
    /// entries spread over 0001…9999, each applied as the service applies it, by recomputing the
    /// streak as of the latest day). A day-by-day walk would take seconds even in a release build;
    /// skipping unlogged runs takes milliseconds. The bound is generous so it cannot flake on a
    /// loaded machine.
    @Test func costDoesNotGrowWithTheCalendarSpan() {
        let first = LocalDay("0001-01-01")!, last = LocalDay("9999-12-31")!
        let step = last.days(since: first) / 299
        var entries: [(day: LocalDay, level: NoAlcLevel)] = []
        let started = ContinuousClock.now
        var sink = 0
        for index in 0..<300 {
            entries.append((first.adding(days: index * step), index % 5 == 4 ? .easy : .steady))
            sink &+= Streak.compute(user: testUser, sortedLevels: entries, today: entries.last!.day, policy: .seed).streakDays
        }
        sink &+= Streak.compute(user: testUser, sortedLevels: entries, today: last, policy: .seed).streakDays
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(2), "300 spread entries took \(elapsed) (checksum \(sink))")
    }
}
