/// Proleptic Gregorian dates as days since 1970-01-01 and back (Howard Hinnant's days-from-civil
/// and civil-from-days): integer arithmetic, no `Calendar`, so never off by a DST hour.
///
/// The zone rules need it for their transition years; the schema's `LocalDay` is built on it.
/// Inlinable: day arithmetic runs for every date the services encode.
public enum CivilCalendar {
    /// Days since 1970-01-01 (negative before it) of a valid date.
    @inlinable
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day counted since 1970-01-01.
    @inlinable
    public static func date(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    @inlinable
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// 0 for Sunday … 6 for Saturday, as POSIX counts (1970-01-01 was a Thursday).
    @inlinable
    public static func sundayBasedWeekday(days: Int) -> Int { ((days % 7) + 7 + 4) % 7 }
}

/// Division rounded towards minus infinity: the day of an instant before 1970 is the one before.
@inlinable @inline(__always)
public func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : (a - b + 1) / b }
