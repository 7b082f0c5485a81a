import Foundation
import LHTSchema
import Testing
import TestSupport
import ZeroMQ

// Helpers for the noalc-streak system tests.

/// A `noalc-streak` following `logger`.
func startStreak(following logger: ServiceProcess, _ arguments: [String] = []) throws -> ServiceProcess {
    try ServiceProcess("noalc-streak", arguments: ["--session-logger-api", logger.api, "--session-logger-events", logger.events] + arguments)
}

/// `count` consecutive days from `first`, as `YYYY-MM-DD`.
func days(from first: String, count: Int) -> [String] {
    (0..<count).map { LocalDay(first)!.adding(days: $0).description }
}

/// Requests sent before any reply is read, as a busy client sends them; `finish` expects every one to succeed.
struct Pipeline {
    let socket: Socket
    let op: String
    let count: Int

    init(_ endpoint: String, context: Context, _ op: String, _ requests: [[String: Any]]) throws {
        socket = try Socket(context, .dealer)
        try socket.connect(endpoint)
        for data in requests {
            try socket.send(multipart: [Data(), JSONSerialization.data(withJSONObject: ["v": 1, "op": op, "data": data])])
        }
        self.op = op
        count = requests.count
    }

    func finish() throws {
        try socket.setReceiveTimeout(milliseconds: 30_000)
        for _ in 0..<count {
            guard let frames = try socket.receiveMultipart(), let body = frames.last else { throw HarnessError("no reply to a pipelined \(op)") }
            let reply = try JSONDecoder().decode(JSONValue.self, from: body)
            guard reply["ok"]?.boolValue == true else { throw HarnessError("\(op) failed: \(String(describing: reply).prefix(300))") }
        }
    }
}

func pipeline(_ endpoint: String, context: Context, _ op: String, _ requests: [[String: Any]]) throws {
    try Pipeline(endpoint, context: context, op, requests).finish()
}

/// Every event a service stored, through `events.since`.
func allEvents(_ client: WireClient) throws -> [JSONValue] {
    var events: [JSONValue] = []
    var lastSeq: Int64 = 0
    repeat {
        let page = try client.ok("events.since", ["after": events.count, "limit": 1000])
        lastSeq = page["lastSeq"]!.intValue!
        let received = page["events"]!.arrayValue
        events += received
        if received.isEmpty { break }
    } while events.count < lastSeq
    return events
}
