import Foundation
import LHTSchema
import StreakRules
import Testing

@Suite("NoAlc calendar")
struct NoAlcCalendarTests {
    @Test func colours() {
        #expect(NoAlcCalendar.color(for: .steady) == "#0EBF6E")
        #expect(NoAlcCalendar.color(for: .easy) == "#89D6B2")
        #expect(NoAlcCalendar.color(for: .wild) == "#B6B6B6")
    }

    @Test("a month lists every day with its level and colour, and ignores other months")
    func novemberDays() throws {
        let levels: [LocalDay: NoAlcLevel] = [
            LocalDay("2026-10-31")!: .wild,
            LocalDay("2026-11-01")!: .steady,
            LocalDay("2026-11-15")!: .easy,
            LocalDay("2026-11-30")!: .wild,
            LocalDay("2026-12-01")!: .steady,
        ]
        let days = try #require(NoAlcCalendar.month("2026-11", levels: levels))
        #expect(days.count == 30)
        #expect(days.map(\.day.description) == (1...30).map { String(format: "2026-11-%02d", $0) })
        #expect(days[0] == CalendarDay(day: LocalDay("2026-11-01")!, level: .steady))
        #expect(days[0].color == "#0EBF6E")
        #expect(days[14].level == .easy && days[14].color == "#89D6B2")
        #expect(days[29].level == .wild && days[29].color == "#B6B6B6")
        #expect(days[1].level == nil && days[1].color == nil)
        #expect(days.filter { $0.level != nil }.count == 3)
    }

    @Test("month lengths, February in leap and common years", arguments: [
        ("2024-02", 29), ("2026-02", 28), ("2000-02", 29), ("1900-02", 28),
        ("2026-01", 31), ("2026-04", 30), ("2026-12", 31), ("9999-12", 31), ("0001-01", 31),
    ])
    func monthLength(month: String, count: Int) throws {
        let days = try #require(NoAlcCalendar.month(month, levels: [:]))
        #expect(days.count == count)
        #expect(days.first?.day.description == month + "-01")
        #expect(days.last?.day.description == month + "-" + String(count))
        #expect(zip(days, days.dropFirst()).allSatisfy { $1.day == $0.day.adding(days: 1) })
        #expect(NoAlcCalendar.monthRange(month) == days.first!.day...days.last!.day)
    }

    @Test("malformed months are nil", arguments: [
        "", "2026", "2026-1", "2026-001", "26-11", "2026/11", "2026-13", "2026-00", "0000-01",
        "2026-11-01", " 2026-11", "2026-11 ", "abcd-ef", "2026-1a", "+026-11", "２０２６-11", "2026−11",
    ])
    func malformed(month: String) {
        #expect(NoAlcCalendar.month(month, levels: [:]) == nil)
        #expect(NoAlcCalendar.monthRange(month) == nil)
    }

    @Test func encodesNullsForUnloggedDays() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let day = LocalDay("2026-11-02")!
        #expect(String(decoding: try encoder.encode(CalendarDay(day: day, level: nil)), as: UTF8.self)
            == #"{"color":null,"day":"2026-11-02","level":null}"#)
        #expect(String(decoding: try encoder.encode(CalendarDay(day: day, level: .easy)), as: UTF8.self)
            == ##"{"color":"#89D6B2","day":"2026-11-02","level":"easy"}"##)
        let back = try JSONDecoder().decode(CalendarDay.self, from: encoder.encode(CalendarDay(day: day, level: .wild)))
        #expect(back == CalendarDay(day: day, level: .wild))
    }
}
