import Foundation
import Logging
import ZeroMQ

/// A running service as its executable and the tests see it.
public protocol Service: AnyObject {
    var host: ServiceHost { get }
    /// The `ready …` line; services with extra endpoints add them after the standard two.
    var readyLine: String { get }
}

extension Service {
    public var readyLine: String { host.readyLine() }

    /// Serves until `shutdown` is requested.
    public func run(until shutdown: ShutdownSignal) { host.run(until: shutdown) }
}

extension ServiceCommandLine {
    /// The whole of a service's `main`: logging, signals, start-up, the ready line, the loop, exit 0.
    /// A failure to start is one line on standard error: status 2 when a flag's endpoint cannot be
    /// bound, 1 otherwise.
    public static func serve(_ name: String, start: (Logger) throws -> Service) -> Never {
        bootstrapLogging()
        let logger = Logger(label: name)
        let shutdown = ShutdownSignal()
        shutdown.installSignalHandlers()
        let service: Service
        do {
            service = try start(logger)
        } catch {
            FileHandle.standardError.write(Data("error: \(name) cannot start: \(error)\n".utf8))
            exit(error is ZMQError ? 2 : 1)
        }
        announce(service.readyLine)
        service.run(until: shutdown)
        exit(0)
    }
}
