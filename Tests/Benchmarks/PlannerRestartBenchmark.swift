import Foundation
import LHTSchema
import TestSupport
import ZeroMQ

/// The planner's start after a real load through its api and a clean stop, beside the seeded start
/// (`PlannerBenchmark.run`): every `reminder.changed` of the load is in its log, so a start that
/// replayed them all (the decisions' place in the log left behind them) would show here.
extension PlannerBenchmark {
    /// Puts `users` × `perUser` reminders through the api of a fresh planner, stops it, and times
    /// three starts, each after a clean stop. Returns the median.
    static func startAfterAPILoad(context: Context, logger: InProcessService, users: Int, perUser: Int) throws -> Double {
        let directory = temporaryDirectory("lht-bench-planner-api").path
        var planner = try startPlanner(context: context, directory: directory, logger: logger)
        let clients = 8
        let loadSeconds = try time {
            _ = LoadClients.throughput(endpoint: planner.api, context: context, clients: clients, window: 64) { client in
                stride(from: client, to: users, by: clients).flatMap { user -> [Data] in
                    let userId = UserID("api\(user)")!
                    return [LoadClients.frame(Ops.userPut, UserPutRequest(userId: userId, timeZone: ZoneID("Europe/Berlin")!, locale: .en))]
                        + (0..<perUser).map { k in
                            let minute = (user * perUser + k) * 7 % 1440
                            return LoadClients.frame(Ops.reminderPut, ReminderPutRequest(userId: userId, activity: k % 2 == 0 ? .mindfulness : .workout,
                                                                                         time: LocalTime(hour: minute / 60, minute: minute % 60)!))
                        }
                }
            }
        }
        planner.stop()
        var starts: [Double] = []
        for round in 0..<3 {
            if round > 0 { planner.stop() }
            starts.append(try time { planner = try startPlanner(context: context, directory: directory, logger: logger) })
        }
        planner.stop()
        let median = LoadClients.percentile(starts, 0.5)
        print(String(format: "  planner ready after an api load     %6.2f s    (%d reminders put through the api in %.0f s, then a clean stop) [%@]",
                     median, users * perUser, loadSeconds, starts.map { String(format: "%.2f", $0) }.joined(separator: ", ")))
        return median
    }
}
