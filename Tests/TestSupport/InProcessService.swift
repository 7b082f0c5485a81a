import Foundation
import LHTClient
import LHTSchema
import Logging
import ServiceHost
import Synchronization
import ZeroMQ

/// One service built by its library and run in this process, on a thread of its own, the way the
/// executable runs it but without the process boundary.
///
/// A socket belongs to the thread that created it, so the service is built ON that thread and only
/// what is safe to share comes back: its bound endpoints (from its ready line), the ops it
/// registered, and a way to stop it. The service object never leaves its thread.
public final class InProcessService: Sendable {
    public let name: ServiceName
    /// The ready line, `ready <name> api=… events=…[ intake=…]`, exactly as the executable prints it.
    public let readyLine: String
    /// Every endpoint of the ready line by its key: `api`, `events`, and `intake` for the session logger.
    public let endpoints: [String: String]
    /// `service.host.registeredOps`, read on the service's thread before it started serving.
    public let registeredOps: Set<String>
    private let shutdown: ShutdownSignal
    private let finished: Finished

    /// The api ROUTER as bound (`tcp://127.0.0.1:43117`, `inproc://…`).
    public var api: String { endpoints["api"]! }
    /// The events PUB as bound.
    public var events: String { endpoints["events"]! }

    fileprivate init(name: ServiceName, readyLine: String, registeredOps: Set<String>, shutdown: ShutdownSignal, finished: Finished) {
        self.name = name
        self.readyLine = readyLine
        endpoints = Self.endpoints(ofReadyLine: readyLine)
        self.registeredOps = registeredOps
        self.shutdown = shutdown
        self.finished = finished
    }

    /// `key=value` pairs after `ready <name>`.
    static func endpoints(ofReadyLine line: String) -> [String: String] {
        var endpoints: [String: String] = [:]
        for part in line.split(separator: " ").dropFirst(2) {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { endpoints[String(pair[0])] = String(pair[1]) }
        }
        return endpoints
    }

    /// Whether the service's thread has ended (after `stop()`, or because its loop ended by itself).
    public var isStopped: Bool { finished.isDone }

    /// Requests shutdown (the loop finishes the message in hand) and waits up to `timeout` for the
    /// thread to end and close the service's sockets. False when it did not end in time. Idempotent.
    @discardableResult
    public func stop(timeout: TimeInterval = 5) -> Bool {
        shutdown.request()
        return finished.wait(timeout: timeout)
    }

    deinit { stop() }
}

/// Builds a service with `build` on a new thread, waits until it is built (its sockets bound, its
/// start-up catch-up done), and runs its loop there until `stop()`.
///
/// ```swift
/// let logger = try startService(context: context) { context in
///     try SessionLogger(settings: settings, logger: quietLogger("session-logger"), context: context)
/// }
/// defer { logger.stop() }
/// ```
/// `context` is handed to `build`: services sharing one context can talk over `inproc://`.
/// Throws what `build` threw, or `HarnessError` when it did not finish within `timeout`.
public func startService(context: Context, timeout: TimeInterval = 10,
                         _ build: @escaping @Sendable (Context) throws -> any Service) throws -> InProcessService {
    let shutdown = ShutdownSignal()
    let finished = Finished()
    let started = Mutex<Result<InProcessService, any Error>?>(nil)
    let startedSignal = DispatchSemaphore(value: 0)
    let thread = Thread {
        // Everything the service owns is released in `serve`, on this thread, before `finished` is signalled.
        func serve() {
            let service: any Service
            do {
                service = try build(context)
            } catch {
                started.withLock { $0 = .failure(error) }
                startedSignal.signal()
                return
            }
            let handle = InProcessService(name: service.host.service, readyLine: service.readyLine,
                                          registeredOps: service.host.registeredOps, shutdown: shutdown, finished: finished)
            started.withLock { $0 = .success(handle) }
            startedSignal.signal()
            service.run(until: shutdown)
        }
        serve()
        finished.signal()
    }
    thread.name = "in-process service"
    thread.stackSize = 8 << 20
    thread.start()
    guard startedSignal.wait(timeout: .now() + timeout) == .success else {
        shutdown.request()  // if it ever finishes building, it stops at once
        throw HarnessError("the service was not built within \(timeout) s")
    }
    // Taken out, so the thread's closure does not keep the handle (whose deinit stops the service) alive.
    return try started.withLock { $0.take()! }.get()
}

/// A one-shot "the thread has ended" flag that any number of callers can wait on.
final class Finished: Sendable {
    private let done = Mutex(false)
    private let condition = NSCondition()

    var isDone: Bool { done.withLock { $0 } }

    func signal() {
        condition.lock()
        done.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }

    func wait(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while !isDone {
            if !condition.wait(until: deadline) { return isDone }
        }
        return true
    }
}

/// Which transport a test's services bind: wildcard loopback TCP ports, or `inproc://` names on
/// the shared context (unique per call, so tests running in parallel never collide).
public enum Transport: String, Sendable, CaseIterable, CustomStringConvertible {
    case tcp
    case inproc

    public var description: String { rawValue }

    /// An endpoint for `service`'s `role` socket to bind.
    public func endpoint(_ service: ServiceName, _ role: SocketRole) -> String {
        switch self {
        case .tcp: "tcp://127.0.0.1:*"
        case .inproc: "inproc://\(service.rawValue)-\(role.rawValue)-\(UUID().uuidString.prefix(8))"
        }
    }

    /// `--api`, `--events` (and `--intake` for the session logger) for `service`, as its Options parse them.
    public func bindArguments(_ service: ServiceName) -> [String] {
        service.roles.flatMap { ["--\($0.rawValue)", endpoint(service, $0)] }
    }
}

/// A logger for services under test: silent, unless `LHT_TEST_LOG_LEVEL` (e.g. `debug`) asks for
/// their logs on standard error.
public func quietLogger(_ label: String) -> Logger {
    guard let level = ProcessInfo.processInfo.environment["LHT_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) else {
        return Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
    }
    var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
    logger.logLevel = level
    return logger
}
