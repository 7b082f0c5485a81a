import LHTSchema
import ZoneRules

/// Where `OccurrenceCalendar` gets a zone's UTC offsets from.
public protocol UTCOffsets {
    /// The offset (seconds east of UTC) in force at `utcSeconds`.
    func offset(at utcSeconds: Int64) -> Int64
}

/// A zone's rules from the system's tzdata (a binary search in its transitions): what the planner
/// computes every occurrence with.
extension ZoneRules: UTCOffsets {}
