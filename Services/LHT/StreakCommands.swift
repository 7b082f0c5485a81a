import ArgumentParser
import Foundation
import LHTSchema

struct Streak: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "streak", abstract: "The user's alcohol-free streak and jokers.")

    @Option(name: .customLong("as-of"), help: ArgumentHelp("Ignore entries after this day (default today in the user's zone, from the planner).", valueName: "day"))
    var asOf: String?

    @OptionGroup var options: UserCommandOptions

    func validate() throws {
        if let asOf, LocalDay(asOf) == nil { throw ValidationError("--as-of: \"\(asOf)\" is not a day as YYYY-MM-DD") }
    }

    func run() throws {
        let client = try Client(connection)
        let userId = try user.userID()
        let asOfDay: LocalDay? = try wireValue(asOf, field: "asOf")
        // "Today" is the user's: without --as-of the streak service takes it in the user's zone.
        let zone = asOfDay == nil ? try userZone(client, user: userId).zone : nil
        let answer = try client.call(Ops.streakGet, StreakGetRequest(userId: userId, asOf: asOfDay, timeZone: zone))
        if output.json { return emit(answer.rawText) }
        let state = answer.value
        var table = Table("", "")
        table.add("streak", "\(state.streakDays) \(state.streakDays == 1 ? "day" : "days") (as of \(state.asOf))")
        table.add("jokers", "\(state.rewardsAvailable) on hand (earned \(state.rewardsEarned), used \(state.rewardsUsed), lost \(state.rewardsLost))")
        table.add("last logged", (state.lastLoggedDay.map { "\($0)" } ?? "never") + (state.todayLogged ? ", today logged" : ", today not logged yet"))
        table.add("policy", state.policy)
        table.lines.dropFirst().forEach(emit)
    }
}

struct CalendarCommand: UserScopedCommand {
    static let configuration = CommandConfiguration(
        commandName: "calendar",
        abstract: "A month of NoAlc levels and activity, in the terminal or as an SVG picture.",
        discussion: """
            Terminal: each day's number on its level's colour (steady #0EBF6E, easy #89D6B2, wild #B6B6B6), \
            then w for a workout and m for mindfulness; with --no-color (or NO_COLOR set) the level is a \
            letter: S steady, E easy, W wild, . nothing logged. --svg draws three concentric marks per day \
            (SEMANTICS §6): NoAlc as the inner fill (28 pt), workout as the middle ring (32 pt), mindfulness \
            as the outer ring (42 pt). --json prints {"calendar":<calendar.get data>,"summary":<daily.summary data>}.
            """)

    @Option(help: ArgumentHelp("The month, YYYY-MM (default this month in the user's zone).", valueName: "month"))
    var month: String?

    @Flag(name: .customLong("no-color"), help: "Plain letters instead of ANSI colours.")
    var noColor = false

    @Option(help: ArgumentHelp("Also write the month as an SVG picture to this file.", valueName: "file"))
    var svg: String?

    @OptionGroup var options: UserCommandOptions

    func validate() throws {
        if let month, MonthGrid.days(of: month) == nil { throw ValidationError("--month: \"\(month)\" is not a month as YYYY-MM") }
    }

    func run() throws {
        let client = try Client(connection)
        let userId = try user.userID()
        let zone = try userZone(client, user: userId).zone
        let monthText = month ?? String(Instant.now().local(in: zone).day.description.prefix(7))
        let days = MonthGrid.days(of: monthText)!
        guard let calendarRequest = CalendarGetRequest(userId: userId, month: monthText) else {
            throw Failure.local("\(monthText) is not a month the streak service takes")
        }
        let calendar = try client.call(Ops.calendarGet, calendarRequest)
        let summary = try client.call(Ops.dailySummary, DailySummaryRequest(
            userId: userId, from: days.lowerBound, until: days.upperBound, timeZone: zone))
        let grid = MonthGrid(month: monthText, user: user.id, days: days, calendar: calendar.value.days, summary: summary.value.days)
        if let svg {
            do {
                try Data(grid.svg().utf8).write(to: URL(fileURLWithPath: svg))
            } catch {
                throw Failure.local("cannot write \(svg): \(error.localizedDescription)")
            }
        }
        if output.json { return emit("{\"calendar\":\(calendar.rawText),\"summary\":\(summary.rawText)}") }
        grid.terminal(color: !noColor && environment["NO_COLOR"] == nil).forEach(emit)
        if let svg { emit("wrote \(svg)") }
    }
}

/// One month of marks, drawn for the terminal or as SVG.
struct MonthGrid {
    struct Day {
        let day: LocalDay
        let level: NoAlcLevel?
        let color: String?
        let mindfulnessMinutes: Int
        let workoutMinutes: Int
    }

    let month: String
    let user: String
    let days: [Day]

    static let levelColors: [NoAlcLevel: String] = [.steady: "#0EBF6E", .easy: "#89D6B2", .wild: "#B6B6B6"]
    static let workoutColor = "#FF8A3D"
    static let mindfulnessColor = "#7A6FF0"
    static let monthNames = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                             "October", "November", "December"]

    init(month: String, user: String, days: ClosedRange<LocalDay>, calendar: [CalendarReply.Day], summary: [DailySummaryDay]) {
        self.month = month
        self.user = user
        let levels = Dictionary(calendar.map { ($0.day, $0) }, uniquingKeysWith: { $1 })
        let minutes = Dictionary(summary.map { ($0.day, $0) }, uniquingKeysWith: { $1 })
        self.days = (days.lowerBound.ordinal...days.upperBound.ordinal).map { ordinal in
            let day = LocalDay(ordinal: ordinal)
            let level = levels[day]?.level ?? minutes[day]?.noalc
            return Day(day: day, level: level, color: levels[day]?.color ?? level.flatMap { MonthGrid.levelColors[$0] },
                       mindfulnessMinutes: minutes[day]?.mindfulnessMinutes ?? 0, workoutMinutes: minutes[day]?.workoutMinutes ?? 0)
        }
    }

    /// The first through last day of `YYYY-MM`.
    static func days(of month: String) -> ClosedRange<LocalDay>? {
        guard month.count == 7, let first = LocalDay(month + "-01") else { return nil }
        let next = first.components.month == 12 ? LocalDay(year: first.components.year + 1, month: 1, day: 1)
                                                : LocalDay(year: first.components.year, month: first.components.month + 1, day: 1)
        return next.map { first...$0.adding(days: -1) }
    }

    var title: String {
        let (year, number, _) = days[0].day.components
        return "\(MonthGrid.monthNames[number - 1]) \(year) · \(user)"
    }

    /// Blank cells before the 1st: Monday first.
    private var leading: Int { Weekday.allCases.firstIndex(of: days[0].day.weekday)! }

    func terminal(color: Bool) -> [String] {
        var lines = [title, " Mo    Tu    We    Th    Fr    Sa    Su"]
        var cells = Array(repeating: "     ", count: leading)
        for day in days {
            let number = String(day.day.components.day)
            let padded = number.count == 1 ? " " + number : number
            let marks = (day.workoutMinutes > 0 ? "w" : " ") + (day.mindfulnessMinutes > 0 ? "m" : " ")
            if color, let hex = day.color, let (r, g, b) = MonthGrid.rgb(hex) {
                cells.append("\u{1B}[48;2;\(r);\(g);\(b)m\u{1B}[38;2;0;0;0m\(padded)\u{1B}[0m " + marks)
            } else {
                let letter = day.level.map { String($0.rawValue.prefix(1).uppercased()) } ?? (color ? " " : ".")
                cells.append(padded + letter + marks)
            }
        }
        for start in stride(from: 0, to: cells.count, by: 7) {
            lines.append(cells[start..<min(start + 7, cells.count)].joined(separator: " ").trimmingTrailingSpaces())
        }
        if color {
            let swatches = [NoAlcLevel.steady, .easy, .wild].map { level -> String in
                let (r, g, b) = MonthGrid.rgb(MonthGrid.levelColors[level]!)!
                return "\u{1B}[48;2;\(r);\(g);\(b)m  \u{1B}[0m \(level.rawValue)"
            }
            lines.append(swatches.joined(separator: "  ") + "  w workout  m mindfulness")
        } else {
            lines.append("S steady  E easy  W wild  . not logged  w workout  m mindfulness")
        }
        return lines
    }

    static func rgb(_ hex: String) -> (Int, Int, Int)? {
        guard hex.count == 7, hex.first == "#", let value = Int(hex.dropFirst(), radix: 16) else { return nil }
        return (value >> 16 & 0xFF, value >> 8 & 0xFF, value & 0xFF)
    }

    /// SEMANTICS §6: per day an inner NoAlc fill (28 pt), a workout ring (32 pt) and a mindfulness ring (42 pt),
    /// each drawn where the day has any; diameters are outer edges.
    func svg() -> String {
        let cell = 56.0, margin = 20.0, top = 76.0
        let rows = (leading + days.count + 6) / 7
        let width = margin * 2 + cell * 7, height = top + cell * Double(rows) + 44
        func number(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }
        var parts = [
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(number(width))\" height=\"\(number(height))\" viewBox=\"0 0 \(number(width)) \(number(height))\" font-family=\"-apple-system, Helvetica, Arial, sans-serif\">",
            "<title>\(escape(title))</title>",
            "<rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>",
            "<text x=\"\(number(margin))\" y=\"32\" font-size=\"18\" font-weight=\"600\" fill=\"#1D1D1F\">\(escape(title))</text>",
        ]
        for (index, name) in ["Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"].enumerated() {
            parts.append("<text x=\"\(number(margin + cell * (Double(index) + 0.5)))\" y=\"60\" font-size=\"11\" text-anchor=\"middle\" fill=\"#6E6E73\">\(name)</text>")
        }
        for (offset, day) in days.enumerated() {
            let slot = leading + offset
            let cx = margin + cell * (Double(slot % 7) + 0.5), cy = top + cell * (Double(slot / 7) + 0.5)
            var marks: [String] = []
            // Rings 2 pt wide: outer edge at the diameter, so the fill (r 14) and the rings never overlap.
            if day.mindfulnessMinutes > 0 {
                marks.append("<circle class=\"mindfulness\" cx=\"\(number(cx))\" cy=\"\(number(cy))\" r=\"20\" fill=\"none\" stroke=\"\(MonthGrid.mindfulnessColor)\" stroke-width=\"2\"><title>\(day.mindfulnessMinutes) min mindfulness</title></circle>")
            }
            if day.workoutMinutes > 0 {
                marks.append("<circle class=\"workout\" cx=\"\(number(cx))\" cy=\"\(number(cy))\" r=\"15\" fill=\"none\" stroke=\"\(MonthGrid.workoutColor)\" stroke-width=\"2\"><title>\(day.workoutMinutes) min workout</title></circle>")
            }
            if let level = day.level, let color = day.color {
                marks.append("<circle class=\"noalc \(level.rawValue)\" cx=\"\(number(cx))\" cy=\"\(number(cy))\" r=\"14\" fill=\"\(color)\"><title>\(level.rawValue)</title></circle>")
            }
            parts.append("<g id=\"day-\(day.day)\">" + marks.joined()
                + "<text x=\"\(number(cx))\" y=\"\(number(cy + 4))\" font-size=\"11\" text-anchor=\"middle\" fill=\"#1D1D1F\">\(day.day.components.day)</text></g>")
        }
        let legendY = top + cell * Double(rows) + 24
        let legend: [(String, String)] = [("NoAlc steady", MonthGrid.levelColors[.steady]!), ("easy", MonthGrid.levelColors[.easy]!),
                                          ("wild", MonthGrid.levelColors[.wild]!), ("workout", MonthGrid.workoutColor),
                                          ("mindfulness", MonthGrid.mindfulnessColor)]
        var x = margin
        for (index, (label, color)) in legend.enumerated() {
            let ring = index >= 3
            parts.append("<circle cx=\"\(number(x + 6))\" cy=\"\(number(legendY - 4))\" r=\"6\" fill=\"\(ring ? "none" : color)\""
                + (ring ? " stroke=\"\(color)\" stroke-width=\"2\"" : "") + "/>")
            parts.append("<text x=\"\(number(x + 16))\" y=\"\(number(legendY))\" font-size=\"11\" fill=\"#1D1D1F\">\(label)</text>")
            x += 16 + Double(label.count) * 6.5 + 14
        }
        parts.append("</svg>")
        return parts.joined(separator: "\n") + "\n"
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
