import GRDB
import LHTSchema
@testable import ReminderPlanner
import ReminderPlanning
import Testing

/// The `reminder` table's `rule` column: every rule survives it, values no rule has are refused,
/// and the SQL that migrates to it and the view that reads it agree with the Swift.
struct StoredRuleTests {
    static let edgeMinutes = [0, 1, 59, 60, 719, 720, 1380, 1438, 1439]

    @Test func everyRuleComesBackFromItsColumn() {
        var rules: [StoredRule] = []
        for activity in Activity.allCases {
            for minute in 0..<1440 {
                rules.append(StoredRule(activity: activity, time: LocalTime(hour: minute / 60, minute: minute % 60)!,
                                        weekdays: WeekdayMask(bits: UInt8(minute % 128)), lookbackHours: 1 + minute % 48, enabled: minute % 2 == 0))
            }
        }
        for bits in UInt8(0)..<128 {
            for lookback in [0, 1, 12, 24, 48, 255, 256, 65_535] {
                for enabled in [false, true] {
                    rules.append(StoredRule(activity: .noalc, time: LocalTime(hour: 23, minute: 59)!, weekdays: WeekdayMask(bits: bits),
                                            lookbackHours: lookback, enabled: enabled))
                }
            }
        }
        for rule in rules { #expect(StoredRule(bits: rule.bits) == rule) }
    }

    /// The layout is a file format: databases written with it must read the same after any change.
    @Test func theLayoutIsTheOneStoredDatabasesHave() {
        let rule = StoredRule(activity: .workout, time: LocalTime(hour: 7, minute: 30)!, weekdays: WeekdayMask([.mon, .tue, .wed, .thu, .fri]),
                              lookbackHours: 12, enabled: true)
        #expect(rule.bits == 450 | 0b11111 << 11 | 12 << 18 | 1 << 34 | 1 << 35)
        #expect(StoredRule(bits: 1439 | 0b1000000 << 11 | 48 << 18 | 2 << 35)
                == StoredRule(activity: .noalc, time: LocalTime(hour: 23, minute: 59)!, weekdays: WeekdayMask([.sun]), lookbackHours: 48, enabled: false))
    }

    @Test func valuesNoRuleHasAreRefused() {
        let valid = StoredRule(activity: .workout, time: LocalTime(hour: 7, minute: 30)!, weekdays: WeekdayMask(bits: 0x7F),
                               lookbackHours: 12, enabled: true).bits
        #expect(StoredRule(bits: valid) != nil)
        for minute: Int64 in [1440, 1441, 2047] { #expect(StoredRule(bits: valid & ~0x7FF | minute) == nil, "minute \(minute)") }
        #expect(StoredRule(bits: valid | 3 << StoredRule.activityShift) == nil, "activity code 3")
        for bit: Int64 in [37, 40, 62] { #expect(StoredRule(bits: valid | 1 << bit) == nil, "bit \(bit)") }
        #expect(StoredRule(bits: -1) == nil)
        #expect(StoredRule(bits: .min) == nil)
    }

    /// The migration's SQL packs the older columns as `bits` does, and the view unpacks them.
    @Test func sqlPacksAndUnpacksAsSwiftDoes() throws {
        let database = try DatabaseQueue()
        let rules = Activity.allCases.flatMap { activity in
            Self.edgeMinutes.flatMap { minute in
                [(0 as UInt8, 1, false), (0x7F, 48, true), (0x2A, 12, true), (0x55, 300, false)].map { bits, lookback, enabled in
                    StoredRule(activity: activity, time: LocalTime(hour: minute / 60, minute: minute % 60)!, weekdays: WeekdayMask(bits: bits),
                               lookbackHours: lookback, enabled: enabled)
                }
            }
        }
        try database.write { db in
            try db.execute(sql: """
                CREATE TABLE reminder (activity TEXT, minute_of_day INTEGER, weekday_mask INTEGER, lookback_hours INTEGER, enabled INTEGER,
                                       rule INTEGER);
                CREATE VIEW reminder_fields AS SELECT \(StoredRule.sqlColumns) FROM reminder;
                """)
            for rule in rules {
                try db.execute(sql: "INSERT INTO reminder VALUES (?, ?, ?, ?, ?, NULL)",
                               arguments: [rule.activity.rawValue, rule.time.minutesSinceMidnight, Int(rule.weekdays.bits),
                                           rule.lookbackHours, rule.enabled])
            }
            try db.execute(sql: "INSERT INTO reminder VALUES ('yoga', 60, 1, 12, 1, NULL), ('workout', 1440, 1, 12, 1, NULL)")
            try db.execute(sql: "UPDATE reminder SET rule = \(StoredRule.sqlFromColumns) WHERE \(StoredRule.sqlValidColumns)")
        }
        let packed = try database.read { try Int64.fetchAll($0, sql: "SELECT rule FROM reminder WHERE rule IS NOT NULL ORDER BY rowid") }
        #expect(packed == rules.map(\.bits))
        let unpacked = try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM reminder_fields WHERE activity IS NOT NULL").map { row in
                StoredRule(activity: Activity(rawValue: row["activity"])!, time: LocalTime(hour: row["minute_of_day"] / 60, minute: row["minute_of_day"] % 60)!,
                           weekdays: WeekdayMask(bits: row["weekday_mask"]), lookbackHours: row["lookback_hours"], enabled: row["enabled"])
            }
        }
        #expect(unpacked == rules)
    }
}
