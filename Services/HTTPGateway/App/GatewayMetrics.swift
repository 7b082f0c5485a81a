import Foundation
import Logging
import ServiceHost

/// `/metrics` as the services serve it (PROTOCOL "Operations"), on `--metrics` (default 127.0.0.1:7389).
public enum GatewayMetrics {
    /// The default address taken: a warning and no metrics; an explicit one that cannot be bound: exit 2.
    public static func start(_ address: MetricsAddress, logger: Logger) -> MetricsServer? {
        guard case .http(let host, let port, let explicit) = address else { return nil }
        let prometheus = PrometheusMetrics()
        do {
            let server = try MetricsServer(host: host, port: port, metrics: prometheus)
            prometheus.bootstrap()
            return server
        } catch {
            if explicit {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                exit(2)
            }
            logger.warning("metrics not served: the default address cannot be bound", metadata: ["address": "\(address)", "error": "\(error)"])
            return nil
        }
    }
}
