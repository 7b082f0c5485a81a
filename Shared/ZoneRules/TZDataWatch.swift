import Foundation
import Logging

/// Looks at the system's tzdata (`TZData.refresh`: a `stat` of `tzdata.zi` and of each zone file
/// read) every `interval` seconds of the loop's turns, and tells what changed since this watch
/// last looked: it compares rules itself, so services sharing a process (the tests' rigs) each see
/// every change. A check is a `stat` per zone read; an update is seen within one interval.
public struct TZDataWatch {
    /// Well within the 60 s the contract allows (PROTOCOL.md "Zone rules (tzdata)").
    public static let defaultSeconds = 30
    let intervalNanoseconds: UInt64
    private var nextCheck: UInt64
    /// Each zone's rules and the lost zones as this watch last saw them, and the version.
    private var seenRules: [String: ZoneRules] = [:]
    private var seenLost: [String: String] = [:]
    private var seenVersion = TZData.system.version

    public init(seconds: Int = defaultSeconds) {
        intervalNanoseconds = UInt64(max(1, seconds)) * 1_000_000_000
        nextCheck = DispatchTime.now().uptimeNanoseconds + intervalNanoseconds
    }

    /// What changed since the last check, when a check is due and something did; nil otherwise.
    public mutating func check(logger: Logger) -> TZData.Refresh? {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= nextCheck else { return nil }
        nextCheck = now + intervalNanoseconds
        // Zones first read since the last check were read with the rules the service has used.
        for (zone, rules) in TZData.system.snapshot().rules where seenRules[zone] == nil { seenRules[zone] = rules }
        TZData.system.refresh()
        let (rules, lost) = TZData.system.snapshot()
        var changes = TZData.Refresh()
        for (zone, current) in rules {
            if let before = seenRules[zone], before !== current, before != current { changes.changed[zone] = (before, current) }
        }
        for (zone, reason) in lost where seenLost[zone] == nil { changes.lost[zone] = reason }
        if TZData.system.version != seenVersion { changes.newVersion = TZData.system.version }
        (seenRules, seenLost, seenVersion) = (rules, lost, TZData.system.version)
        guard !changes.isEmpty else { return nil }
        if let version = changes.newVersion { logger.notice("tzdata is now \(version)", metadata: ["directory": "\(TZData.system.directory)"]) }
        for zone in changes.changed.keys.sorted() { logger.notice("zone rules changed", metadata: ["zone": "\(zone)"]) }
        return changes
    }
}
