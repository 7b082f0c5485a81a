import ServiceHost
import SessionLogger

let options = ServiceCommandLine.parseOrExit(SessionLoggerOptions.self, flags: SessionLoggerOptions.flagNames) {
    _ = try SessionLoggerSettings($0)
}
ServiceCommandLine.serve("session-logger", common: options.common) { logger in
    try SessionLogger(settings: SessionLoggerSettings(options), logger: logger)
}
