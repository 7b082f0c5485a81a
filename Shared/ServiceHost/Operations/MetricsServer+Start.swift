import Foundation
import Logging

extension MetricsServer {
    /// Binds `address` and makes Prometheus the swift-metrics backend, before the executable makes
    /// its metrics. The default address taken: a warning, and no metrics. An address given
    /// explicitly that cannot be bound: exit 2. `off`: nil.
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
