import Foundation
import Glibc
import PostgresStorage
import TestSupport
import ZeroMQ

/// Part 3 of `bench planner --postgres`: a covering session acknowledged → `reminder.cancelled`,
/// logger and planner in-process (`PlannerBenchmark.cancellations`), in the same run on SQLite and
/// on PostgreSQL with libpq's pipeline by turns (up to ten rounds), then on PostgreSQL without it
/// (`LHT_POSTGRES_PIPELINE=off`, a logger instance and a planner of their own, on other users'
/// reminders). For PostgreSQL, the round trips per acknowledged session (both services', every
/// connection of this process; the background's, measured idle just before, taken off). Each round
/// also runs both again on other users with the server on a core of its own (`CoreSplit`), as on
/// a host of its own, and SQLite on the same cores as the services.
enum PlannerPostgresAckBenchmark {
    typealias Service = (logger: InProcessService, directory: String)
    typealias Latencies = (ack: [Double], logged: [Double], cancel: [Double])
    /// Round trips and statements to PostgreSQL per session.
    typealias Traffic = (roundTrips: Double, statements: Double)

    static func run(context: Context, server: TestPostgres, users: Int, sessions: Int, sqlite: Service, postgres: Service) throws {
        let database = ["--database", server.url]
        var rows: [(name: String, latencies: Latencies, traffic: Traffic?)] = []

        // SQLite and PostgreSQL by turns, a round of sessions each, each round on users of its own:
        // this box's load swings between seconds, and a phase each would put that swing in the ratio.
        let sqlitePlanner = try PlannerBenchmark.startPlanner(context: context, directory: sqlite.directory, logger: sqlite.logger)
        let planner = try PlannerBenchmark.startPlanner(context: context, directory: postgres.directory, logger: postgres.logger, extra: database)
        let rounds = max(1, min(10, sessions / 25)), perRound = sessions / rounds, measured = perRound * rounds
        func joined(_ x: Latencies, _ y: Latencies) -> Latencies { (x.ack + y.ack, x.logged + y.logged, x.cancel + y.cancel) }
        var onSQLite: Latencies = ([], [], []), onPostgres: Latencies = ([], [], []), traffic: [Traffic] = []
        var roundRatios: [Double] = []
        let cores = CoreSplit.cores, postmaster = try PostgresBenchmark.parentPID(of: server.connect().backendPID)
        var onSQLiteBeside: Latencies = ([], [], []), onPostgresOwnCore: Latencies = ([], [], [])
        var ownCoreRatios: [Double] = [], split: String?
        func onSQLiteRound(from firstUser: Int) throws -> Latencies {
            try PlannerBenchmark.cancellations(context: context, logger: sqlite.logger, planner: sqlitePlanner, users: users,
                                               sessions: perRound, firstUser: firstUser)
        }
        func onPostgresRound(from firstUser: Int) throws -> Latencies {
            try PlannerBenchmark.cancellations(context: context, logger: postgres.logger, planner: planner, users: users,
                                               sessions: perRound, firstUser: firstUser)
        }
        for round in 0..<rounds {
            let firstUser = users / 2 + round * perRound * 2
            let a = try onSQLiteRound(from: firstUser)
            let (b, trips) = try counted(perRound) { try onPostgresRound(from: firstUser) }
            onSQLite = joined(onSQLite, a)
            onPostgres = joined(onPostgres, b)
            traffic.append(trips)
            roundRatios.append(percentile(b.cancel, 0.5) / percentile(a.cancel, 0.5))

            guard let pinned = CoreSplit.split(cores, server: PostgresBenchmark.serverProcesses(postmaster: postmaster)) else { continue }
            defer { pinned.undo() }
            split = pinned.description
            let c = try onSQLiteRound(from: firstUser + perRound)
            let d = try onPostgresRound(from: firstUser + perRound)
            onSQLiteBeside = joined(onSQLiteBeside, c)
            onPostgresOwnCore = joined(onPostgresOwnCore, d)
            ownCoreRatios.append(percentile(d.cancel, 0.5) / percentile(c.cancel, 0.5))
        }
        let runAgain = PostgresStore.writesRunAgainInProcess.load(ordering: .relaxed)
        sqlitePlanner.stop()
        planner.stop()
        let meanTraffic = (traffic.map(\.roundTrips).reduce(0, +) / Double(rounds), traffic.map(\.statements).reduce(0, +) / Double(rounds))
        rows.append(("SQLite             ", onSQLite, nil))
        rows.append(("PostgreSQL         ", onPostgres, meanTraffic))

        // Made with the pipeline off: the variable is read as each connection is made.
        setenv("LHT_POSTGRES_PIPELINE", "off", 1)
        let plainLogger = try InProcessService.sessionLogger(context: context, extra: database)
        defer { plainLogger.stop() }
        let plainPlanner = try PlannerBenchmark.startPlanner(context: context, directory: postgres.directory, logger: plainLogger, extra: database)
        unsetenv("LHT_POSTGRES_PIPELINE")
        // Other users than the rounds': their occurrences are announced cancelled already.
        let (plain, plainTrips) = try counted(measured) {
            try PlannerBenchmark.cancellations(context: context, logger: plainLogger, planner: plainPlanner, users: users,
                                               sessions: measured, firstUser: users / 4)
        }
        rows.append(("PostgreSQL, no pipe", plain, plainTrips))
        plainPlanner.stop()
        if split != nil {
            rows.append(("SQLite, beside     ", onSQLiteBeside, nil))
            rows.append(("PostgreSQL, apart  ", onPostgresOwnCore, nil))
        }

        print("covering session acknowledged → reminder.cancelled, logger and planner in-process on each, \(measured) sessions: "
              + "SQLite and PostgreSQL by turns in \(rounds) rounds, then PostgreSQL without the pipeline")
        if let split { print("  apart: \(split) (as on a host of its own); beside: SQLite on the services' cores in the same rounds") }
        print("  (ms, p50 / p99; ack → session.logged: the logger's announcement, which the planner reacts to; "
              + "round trips and statements: to PostgreSQL per session, both services, the idle background taken off)")
        func cell(_ name: String, _ values: [Double]) -> String {
            String(format: "%@ %6.3f / %6.3f", name, percentile(values, 0.5), percentile(values, 0.99))
        }
        for row in rows {
            print("  \(row.name)   " + [cell("session.log ack", row.latencies.ack), cell("ack → session.logged", row.latencies.logged),
                                         cell("ack → cancelled", row.latencies.cancel)].joined(separator: "   ")
                  + "   (\(row.latencies.cancel.count)/\(measured) observed)"
                  + (row.traffic.map { String(format: "   round trips %.1f, statements %.1f", $0.roundTrips, $0.statements) } ?? ""))
        }
        func ratio(_ over: Int, _ under: Int, _ series: KeyPath<Latencies, [Double]>) -> String {
            let a = rows[over].latencies[keyPath: series], b = rows[under].latencies[keyPath: series]
            return String(format: "p50 %.2f, p99 %.2f", percentile(a, 0.5) / percentile(b, 0.5), percentile(a, 0.99) / percentile(b, 0.99))
        }
        print("  ratio PG/SQLite: ack → cancelled \(ratio(1, 0, \.cancel)); ack → session.logged \(ratio(1, 0, \.logged)); "
              + "session.log ack \(ratio(1, 0, \.ack))")
        print("  ack → cancelled p50 ratio PG/SQLite of each round: " + roundRatios.map { String(format: "%.2f", $0) }.joined(separator: ", ")
              + String(format: " (median %.2f)", percentile(roundRatios, 0.5)))
        if split != nil {
            print("  ratio PG apart/SQLite beside: ack → cancelled \(ratio(4, 3, \.cancel)); of each round: "
                  + ownCoreRatios.map { String(format: "%.2f", $0) }.joined(separator: ", ")
                  + String(format: " (median %.2f)", percentile(ownCoreRatios, 0.5)))
        }
        print("  ratio PG without/with the pipeline: ack → cancelled \(ratio(2, 1, \.cancel)); ack → session.logged \(ratio(2, 1, \.logged))")
        print("  the planner's session writes sent whole with their COMMIT that ran again the usual way (another instance wrote, "
              + "or memory was not the database's): \(runAgain) of \(measured) in the rounds")
        func met(_ over: Int, _ under: Int) -> String {
            PlannerBenchmark.verdict(percentile(rows[over].latencies.cancel, 0.5) <= 2 * percentile(rows[under].latencies.cancel, 0.5))
        }
        print("  target: PostgreSQL ack → cancelled p50 ≤ 2 × SQLite's: sharing the cores \(met(1, 0))"
              + (split != nil ? "; the server apart \(met(4, 3))" : "; the server apart: not measured (one core)"))
    }

    /// `body`'s result and this process's round trips and statements to PostgreSQL per session
    /// during it, less those of the second before it (heartbeats, leases, the planner's memory
    /// poll) at the same rate.
    static func counted(_ sessions: Int, _ body: () throws -> Latencies) throws -> (Latencies, Traffic) {
        func sent() -> (Int, Int) {
            (PostgresConnection.roundTripsInProcess.load(ordering: .relaxed), PostgresConnection.statementsInProcess.load(ordering: .relaxed))
        }
        func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) }
        let idleStart = sent(), idleSince = now()
        Thread.sleep(forTimeInterval: 1)
        let idleEnd = sent(), idleSpan = now() - idleSince
        let start = sent(), since = now()
        let latencies = try body()
        let end = sent(), share = (now() - since) / idleSpan, count = Double(max(latencies.ack.count, 1))
        func perSession(_ total: Int, _ idle: Int) -> Double { (Double(total) - share * Double(idle)) / count }
        return (latencies, (perSession(end.0 - start.0, idleEnd.0 - idleStart.0), perSession(end.1 - start.1, idleEnd.1 - idleStart.1)))
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double { LoadClients.percentile(values, fraction) }
}
