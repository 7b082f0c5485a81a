import ReminderPlanner
import ServiceHost

let options = ServiceCommandLine.parseOrExit(PlannerOptions.self, flags: PlannerOptions.flagNames) {
    _ = try PlannerSettings($0)
}
ServiceCommandLine.serve("reminder-planner", common: options.common) { logger in
    try ReminderPlanner(settings: PlannerSettings(options), logger: logger)
}
