import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import Logging
import ServiceHost
import Storage
import ZeroMQ

/// `session-logger` flags (PROTOCOL.md "Running the services").
public struct SessionLoggerOptions: ServiceArguments {
    @OptionGroup public var common: CommonOptions

    @Option(help: "Endpoint the fire-and-forget intake SUB binds.")
    public var intake: String?

    public init() {}
}

/// Resolved settings; tests build these directly with wildcard ports and a temp directory.
public struct SessionLoggerSettings: Sendable {
    public let service: ServiceSettings
    public let intake: String

    public init(_ options: SessionLoggerOptions) throws {
        service = try ServiceSettings(.sessionLogger, common: options.common)
        intake = try Endpoint.validated(options.intake ?? ServiceName.sessionLogger.defaultEndpoint(.intake), flag: "intake")
        try service.requireLocal(intake, flag: "intake")
    }
}

/// The system's source of truth for sessions and NoAlc check-ins: validated, stored durably,
/// acknowledged, then published.
public final class SessionLogger: Service {
    public let host: ServiceHost
    public let intakeEndpoint: String
    private let intake: Socket
    private let unreadable: UnreadableRows
    private let ids: LoggedIDs
    /// A session may start at most this far ahead of the wall clock (clock skew between devices).
    static let futureToleranceMilliseconds: Int64 = 5 * 60 * 1000

    public init(settings: SessionLoggerSettings, logger: Logger, context: Context? = nil) throws {
        host = try ServiceHost(settings: settings.service, layout: SessionStore.layout, logger: logger, context: context)
        unreadable = UnreadableRows(host: host)
        if host.store.readsBehindTheLog == nil {
            ids = try LoggedIDs()
        } else {
            let started = Date()
            let file = try FilterFile(path: settings.service.dataDirectory.appendingPathComponent("session-logger.ids-filter").path)
            ids = try host.query { try LoggedIDs($0, file: file) }
            logger.info("loaded the ids logged so far", metadata: [
                "ids": "\(ids.count)", "seconds": "\(String(format: "%.3f", Date().timeIntervalSince(started)))"])
        }
        intake = try Socket(host.context, .sub)
        try intake.setReceiveHighWaterMark(100_000)
        // As the api: a frame over 4 MiB drops the publisher's connection, and one over 1 MiB is dropped here.
        try host.serve(intake, role: "intake", takingRequests: true)
        try intake.subscribe("")
        intakeEndpoint = try intake.bind(settings.intake)
        host.count("intakeRejected", by: 0)
        host.count("intakeAccepted", by: 0)
        host.watch(intake) { [unowned self] in self.receiveIntake() }
        registerOps()
    }

    public var readyLine: String { host.readyLine(extra: "intake=\(intakeEndpoint)") }

    /// The logger's tables as its migrations make them, for tools that measure its storage (`bench writes`).
    public static var sqliteMigrations: [Migration] { SessionStore.sqliteMigrations }

    private func registerOps() {
        let unreadable = unreadable, ids = ids
        host.handle(Ops.sessionLog) { input, tx in
            guard input.start.milliseconds(since: tx.now) <= Self.futureToleranceMilliseconds else {
                throw WireError.invalid("data.start", "start is more than 5 minutes in the future")
            }
            return try SessionStore.log(input, in: tx, ids: ids, unreadable: unreadable)
        }
        host.handle(Ops.noalcLog) { input, tx in
            try input.checkDay(today: tx.now.local(in: ZoneID.utc).day)
            return try SessionStore.log(input, in: tx, ids: ids, unreadable: unreadable)
        }
        // On the embedded store these run on the projection's thread, behind the log (`handleRead`).
        host.handleRead(Ops.sessionList) { query, sql in
            try SessionListReply(sessions: SessionStore.sessions(query, in: sql, unreadable: unreadable))
        }
        host.handleRead(Ops.noalcList) { query, sql in
            try NoAlcListReply(entries: SessionStore.latestEntries(userId: query.userId, from: query.from, until: query.until, in: sql,
                                                                 unreadable: unreadable))
        }
        host.handleRead(Ops.dailySummary) { query, sql in
            try DailySummaryReply(days: SessionStore.summary(query, in: sql, unreadable: unreadable))
        }
    }

    /// Intake messages are two frames, `intake` and a request as the api takes it, from a publisher
    /// whose key (with keys on) says who it may log for. Nobody hears a rejection, so it is logged
    /// and counted (`health` → `intakeRejected`; another user's data also → `unauthorized`). A turn
    /// reads as much as an api batch, and a request over 1 MiB is rejected from its size alone.
    private func receiveIntake() {
        var requests: [IncomingRequest] = []
        var bytes = 0
        while requests.count < ServiceHost.batchLimit, bytes < ServiceHost.batchBytes,
              let (topic, request) = try? host.receiveRequest(from: intake) {
            guard topic == [Data("intake".utf8)] else {
                reject("expected two frames, the topic \"intake\" and a request", reason: "malformed")
                continue
            }
            bytes += request.frame.count
            requests.append(request)
        }
        guard !requests.isEmpty else { return }
        for failure in host.failures(processing: requests, allowedOps: [Ops.sessionLog.info, Ops.noalcLog.info]) {
            if let error = failure {
                reject(error.description, reason: error.code.rawValue)
            } else {
                host.count("intakeAccepted")
            }
        }
    }

    /// `reason` labels `lht_intake_dropped_total`: `malformed` or the error code.
    private func reject(_ detail: String, reason: String) {
        host.count("intakeRejected")
        host.countMetric("intake_dropped", "reason", reason)
        host.logger.notice("intake message rejected", metadata: ["reason": "\(detail)"])
    }
}
