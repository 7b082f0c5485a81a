import LHTSchema
import ReminderPlanning

/// A reminder's small fields as the `reminder` table stores them: one integer column, `rule`.
///
/// Start-up reads every reminder row, and SQLite decodes a row's columns one by one: with the
/// activity, time, weekdays, lookback and enabled flag as five columns, the thread reading a million
/// reminders took 3.3k instructions each (callgrind), and 2.3k with this one column.
///
/// Bits 0–10: the minute of the day; 11–17: the weekdays (bit 11 + n: `Weekday.index` n);
/// 18–33: the lookback hours; 34: enabled; 35–36: the activity (`activityCodes`). A `BIGINT` on
/// PostgreSQL. In SQLite's file the view `reminder_fields` shows them as columns, for people
/// reading the database.
public struct StoredRule: Equatable, Sendable {
    public let activity: Activity
    public let time: LocalTime
    public let weekdays: WeekdayMask
    public let lookbackHours: Int
    public let enabled: Bool

    public init(activity: Activity, time: LocalTime, weekdays: WeekdayMask, lookbackHours: Int, enabled: Bool) {
        self.activity = activity
        self.time = time
        self.weekdays = weekdays
        self.lookbackHours = lookbackHours
        self.enabled = enabled
    }

    init(_ reminder: Reminder) {
        self.init(activity: reminder.activity, time: reminder.time, weekdays: WeekdayMask(reminder.weekdays),
                  lookbackHours: reminder.lookbackHours, enabled: reminder.enabled)
    }

    /// Where each field starts; the minute of the day takes bits 0–10.
    static let weekdayShift: Int64 = 11, lookbackShift: Int64 = 18, enabledShift: Int64 = 34, activityShift: Int64 = 35

    /// The stored codes: part of the file format, so written out rather than taken from the enum's order.
    static let activityCodes: [(activity: Activity, code: Int64)] = [(.mindfulness, 0), (.workout, 1), (.noalc, 2)]

    /// The column's value. The lookback is kept to 0...65535 (the protocol allows 1...48).
    public var bits: Int64 {
        let code = Self.activityCodes.first { $0.activity == activity }!.code
        return Int64(time.minutesSinceMidnight) | Int64(weekdays.bits) << Self.weekdayShift
            | Int64(UInt16(clamping: lookbackHours)) << Self.lookbackShift | (enabled ? 1 : 0) << Self.enabledShift | code << Self.activityShift
    }

    /// The rule in a column's value; nil for a value no rule has (a minute past the day, an unknown activity, stray bits).
    public init?(bits: Int64) {
        let minutes = Int(bits & 0x7FF)
        guard let time = LocalTime(hour: minutes / 60, minute: minutes % 60),
              // Bits above the activity's, or a negative value, make a code no activity has.
              let activity = Self.activityCodes.first(where: { $0.code == bits >> Self.activityShift })?.activity else { return nil }
        self.init(activity: activity, time: time, weekdays: WeekdayMask(bits: UInt8(truncatingIfNeeded: bits >> Self.weekdayShift)),
                  lookbackHours: Int(bits >> Self.lookbackShift & 0xFFFF), enabled: bits >> Self.enabledShift & 1 == 1)
    }

    /// SQL for the column's value from the older table's columns (the migration), for rows that pass
    /// `sqlValidColumns`. (SQLite's `|`, `&`, `<<` and `>>` bind alike, left to right: hence every parenthesis.)
    static let sqlFromColumns = """
        minute_of_day | ((weekday_mask & 127) << \(weekdayShift)) | (max(0, min(65535, lookback_hours)) << \(lookbackShift)) \
        | ((enabled != 0) << \(enabledShift)) \
        | ((CASE activity \(activityCodes.map { "WHEN '\($0.activity.rawValue)' THEN \($0.code)" }.joined(separator: " ")) END) << \(activityShift))
        """

    /// The older rows that loading took: the others were skipped at every start, and are not carried over.
    static let sqlValidColumns = """
        minute_of_day BETWEEN 0 AND 1439 AND activity IN (\(activityCodes.map { "'\($0.activity.rawValue)'" }.joined(separator: ", ")))
        """

    /// SQL for the fields as columns, from the column's value (the view).
    static let sqlColumns = """
        CASE rule >> \(activityShift) \(activityCodes.map { "WHEN \($0.code) THEN '\($0.activity.rawValue)'" }.joined(separator: " ")) END AS activity, \
        rule & 2047 AS minute_of_day, (rule >> \(weekdayShift)) & 127 AS weekday_mask, (rule >> \(lookbackShift)) & 65535 AS lookback_hours, \
        (rule >> \(enabledShift)) & 1 AS enabled
        """
}
