/// What a reminder or a logged record is about.
public enum Activity: String, CaseIterable, Codable, Sendable {
    case mindfulness, workout, noalc

    /// The activities a timed session can have (NoAlc is logged per day instead).
    public var isSession: Bool { self != .noalc }
}

/// The three NoAlc levels; `drinks` is the representative count seed `002_…`'s HealthKit samples stored (SEMANTICS §5).
public enum NoAlcLevel: String, CaseIterable, Codable, Sendable {
    case steady, easy, wild

    public var drinks: Int {
        switch self {
        case .steady: 0
        case .easy: 4
        case .wild: 6
        }
    }
}

/// The languages notifications are written in.
public enum NotificationLocale: String, CaseIterable, Codable, Sendable {
    case de, en
}
