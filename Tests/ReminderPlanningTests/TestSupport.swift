import Foundation
import LHTSchema
@testable import ReminderPlanning
import ZoneRules

/// The zone's rules from the system's tzdata.
func zone(_ identifier: String) -> ZoneRules {
    guard let zone = TZData.system.rules(identifier) else { fatalError("zone \(identifier) missing from the tz data") }
    return zone
}

func day(_ text: String) -> LocalDay { LocalDay(text)! }
func time(_ text: String) -> LocalTime { LocalTime(text)! }
func instant(_ text: String) -> Instant { Instant(rfc3339: text)! }

let berlin = zone("Europe/Berlin")
let everyDay = Set(Weekday.allCases)
