import Foundation
import HTTPGateway
import LHTClient
import LHTSchema
import Logging
import ServiceHost

// http-gateway (PROTOCOL "HTTP gateway"): flags and LHT_* variables, one `ready` line, exit 0 on
// SIGTERM/SIGINT after the requests in hand, exit 2 for a flag it cannot use.
var settings: GatewaySettings!
let options = ServiceCommandLine.parseOrExit(GatewayOptions.self, flags: GatewayOptions.flagNames) { options in
    ServiceCommandLine.bootstrapLogging(service: GatewaySettings.executable, try options.logSettings(), instance: "\(ProcessInfo.processInfo.hostName):\(getpid())")
    settings = try GatewaySettings(options)
}
let logger = Logger(label: GatewaySettings.executable)
if settings.insecure { logger.warning("--insecure: the loopback-only and TLS rules are off; put a TLS proxy in front") }
let metrics = MetricsServer.start(settings.metrics, logger: logger)
let gateway: Gateway
do {
    gateway = try Gateway(settings: settings, logger: logger)
} catch {
    FileHandle.standardError.write(Data("error: http-gateway cannot start: \(error)\n".utf8))
    exit(1)
}

signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
let stopSources = [SIGTERM, SIGINT].map { number in
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler {
        gateway.stop(waiting: 1.5)
        metrics?.stop()
        exit(0)
    }
    source.resume()
    return source
}

let done = DispatchSemaphore(value: 0)
let bound = "\(settings.host):\(settings.port)"
// Detached: top-level code is the main actor's, and the main thread waits below.
Task.detached {
    do {
        try await gateway.run { address in
            ServiceCommandLine.announce("ready \(GatewaySettings.executable) \(address)" + (metrics.map { " metrics=\($0.address)" } ?? ""))
        }
    } catch {
        FileHandle.standardError.write(Data("error: http-gateway cannot serve on --http \(bound): \(error)\n".utf8))
        exit(2)
    }
    done.signal()
}
done.wait()
exit(0)
