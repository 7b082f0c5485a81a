import NoAlcStreak
import ServiceHost

let options = ServiceCommandLine.parseOrExit(NoAlcStreakOptions.self, flags: NoAlcStreakOptions.flagNames) {
    _ = try NoAlcStreakSettings($0)
}
ServiceCommandLine.serve("noalc-streak", common: options.common) { logger in
    try NoAlcStreakService(settings: NoAlcStreakSettings(options), logger: logger)
}
