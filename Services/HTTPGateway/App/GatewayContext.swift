import Hummingbird
import NIOCore

/// The request context: Hummingbird's, plus the connection, to cut off a stream whose reader
/// stopped reading and to name the peer in a log line.
struct GatewayContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The peer's address without its port, for the once-a-minute refusal log.
    var peer: String { channel.remoteAddress?.ipAddress ?? "unknown" }

    /// Bodies are read by the handlers themselves, up to `Forwarding.largestBody` and one byte more.
    var maxUploadSize: Int { Forwarding.largestBody + 1 }
}
