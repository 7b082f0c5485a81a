import Foundation
import LHTClient
import LHTSchema
import Synchronization
import TestSupport
import ZeroMQ

/// `bench advance [--reminders 10000] [--days 180]`
///
/// One `clock.advance` over `days` with `reminders` daily reminders, moved in committed steps, while
/// another client asks for `health` every 10 ms: the round trips beside `health` on the idle planner
/// before the move. Target: health within 100 ms throughout.
enum AdvanceBenchmark {
    static func run(_ arguments: [String]) throws {
        let count = Options.int(arguments, "--reminders", 10_000)
        let days = Int64(Options.int(arguments, "--days", 180))
        let context = try Context()
        let logger = try InProcessService.sessionLogger(context: context)
        defer { logger.stop() }
        let start = Instant(rfc3339: "2026-11-16T00:00:00Z")!
        let planner = try InProcessService.planner(context: context, logger: logger, clock: start)
        defer { planner.stop() }
        let client = ServiceClient(context: context, endpoint: planner.api)
        for index in 0..<count {
            let minute = 1 + index * 7 % 1439
            _ = try client.call(Ops.reminderPut, ReminderPutRequest(userId: UserID("u\(index % 50)")!, activity: .workout,
                                                                    time: LocalTime(hour: minute / 60, minute: minute % 60)!),
                                timeoutMilliseconds: 10_000)
        }
        func healthRoundTrip() throws -> Double {
            let asked = DispatchTime.now().uptimeNanoseconds
            _ = try client.call(Ops.health, NoFields(), timeoutMilliseconds: 10_000)
            return Double(DispatchTime.now().uptimeNanoseconds - asked) / 1_000_000
        }
        let idle = try (0..<200).map { _ in try healthRoundTrip() }

        let decided = Mutex<Int?>(nil)
        let api = planner.api
        let began = DispatchTime.now().uptimeNanoseconds
        Thread.detachNewThread {
            let mover = ServiceClient(context: context, endpoint: api)
            let reply = try? mover.call(Ops.clockAdvance, ClockAdvanceRequest(seconds: days * 86_400), timeoutMilliseconds: 3_600_000)
            decided.withLock { $0 = reply?.decided ?? -1 }
        }
        var during: [Double] = []
        while decided.withLock({ $0 == nil }) {
            during.append(try healthRoundTrip())
            Thread.sleep(forTimeInterval: 0.01)  // a sample every 10 ms, as the target asks
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
        let total = decided.withLock { $0 } ?? -1
        print("clock.advance over \(days) days with \(count) daily reminders: \(total) decided in \(String(format: "%.1f", seconds)) s (\(Int(Double(total) / seconds))/s)")
        for (name, values) in [("health, idle planner", idle), ("health during the advance", during)] {
            print(String(format: "  %-26@ %6d answers   p50 %7.3f ms   p99 %7.3f ms   max %7.3f ms", name as NSString, values.count,
                         LoadClients.percentile(values, 0.5), LoadClients.percentile(values, 0.99), values.max() ?? .nan))
        }
        let worst = during.max() ?? .nan
        print(String(format: "  target: every health answer within 100 ms (worst %.1f ms): %@", worst, worst <= 100 ? "met" : "NOT met"))
    }
}
