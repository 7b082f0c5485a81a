import Notifier
import ServiceHost

let options = ServiceCommandLine.parseOrExit(NotifierOptions.self, flags: NotifierOptions.flagNames) {
    _ = try NotifierSettings($0)
}
ServiceCommandLine.serve("notifier", common: options.common) { logger in
    try NotifierService(settings: NotifierSettings(options), logger: logger)
}
