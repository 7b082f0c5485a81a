import Foundation
import LHTSchema
import Logging
import Storage
import ZeroMQ

extension ServiceCommandLine {
    /// How long a stopping service gives queued replies and events to go out (PROTOCOL
    /// "Operations": exit within 2 s of SIGTERM).
    public static let stopLingerMilliseconds: Int32 = 1000

    /// The whole of a service's `main` after `parseOrExit` (which set up logging): the metrics
    /// endpoint, signals, start-up, the ready line (and systemd's READY=1), the loop, a clean stop,
    /// exit 0. A failure to start is one line on standard error: status 2 when a flag's endpoint
    /// (or an explicit `--metrics`) cannot be bound or the database URL is refused, 1 otherwise.
    public static func serve(_ name: String, common: CommonOptions, start: (Logger) throws -> Service) -> Never {
        let logger = Logger(label: name)
        let shutdown = ShutdownSignal.process
        shutdown.installSignalHandlers()
        let metrics = startMetrics(name, common: common, logger: logger)
        let service: Service
        do {
            service = try start(logger)
        } catch {
            FileHandle.standardError.write(Data("error: \(name) cannot start: \(error)\n".utf8))
            exit(error is ZMQError || error is StoreConfigurationError ? 2 : 1)
        }
        announce(service.readyLine + (metrics.map { " metrics=\($0.address)" } ?? ""))
        SystemdNotify.send("READY=1\nMAINPID=\(getpid())")
        service.run(until: shutdown)
        SystemdNotify.send("STOPPING=1")
        metrics?.stop()
        if !service.host.closeForExit(lingerMilliseconds: stopLingerMilliseconds) {
            logger.notice("stopped before every socket was closed; queued messages had \(stopLingerMilliseconds) ms to go out")
        }
        exit(0)
    }

    /// The service's metrics address from its flags, started (`MetricsServer.start`).
    static func startMetrics(_ name: String, common: CommonOptions, logger: Logger) -> MetricsServer? {
        guard let service = ServiceName(rawValue: name),
              let address = try? MetricsAddress(common.metrics, service: service) else { return nil }
        return MetricsServer.start(address, logger: logger)
    }
}
