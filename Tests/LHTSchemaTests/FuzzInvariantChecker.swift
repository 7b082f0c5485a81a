import Foundation
import Testing
import TestSupport
@testable import LHTSchema

/// Checks the pipeline's invariants on one frame and tallies what happened.
struct InvariantChecker {
    /// Violations grouped by kind: a count and the first examples of each.
    private(set) var violations: [String: (count: Int, examples: [String])] = [:]
    var violationCount: Int { violations.values.reduce(0) { $0 + $1.count } }
    private(set) var frames = 0
    private(set) var accepted = 0
    private(set) var codes: [ErrorCode: Int] = [:]
    private(set) var slowest: (seconds: Double, label: String) = (0, "")

    mutating func check(_ frame: Data, _ label: String) {
        frames += 1
        let started = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            if seconds > slowest.seconds { slowest = (seconds, label) }
            if seconds > 2 { violation("slow frame", frame, label, "took \(seconds) s") }
        }
        let head: RequestHead
        switch headResult(frame) {
        case .failure(let error):
            verify(error, frame, label, allowed: [.badJSON, .unsupportedVersion, .invalidArgument], fieldOK: { $0 == "op" })
            if error.code == .badJSON || error.code == .unsupportedVersion, error.field != nil && error.field != "v" {
                violation("head error with a field", frame, label, "\(error.code.rawValue) with field \(error.field!)")
            }
            return
        case .success(let value):
            head = value
        }
        do {
            let value = try decodeRequestData(SessionLogRequest.self, from: frame, head: head)
            accepted += 1
            verifyAccepted(value, frame, label)
        } catch {
            verify(error, frame, label + " (session.log)", allowed: [.invalidArgument, .badJSON], fieldOK: Self.isDataPath)
        }
        do {
            let value = try decodeRequestData(NoAlcLogRequest.self, from: frame, head: head)
            accepted += 1
            verifyAccepted(value, frame, label)
        } catch {
            verify(error, frame, label + " (noalc.log)", allowed: [.invalidArgument, .badJSON], fieldOK: Self.isDataPath)
        }
    }

    /// `data` itself (when it is not an object) or a path below it.
    static func isDataPath(_ field: String) -> Bool { field == "data" || field.hasPrefix("data.") && field.count > 5 }

    private mutating func verify(_ error: WireError, _ frame: Data, _ label: String, allowed: Set<ErrorCode>, fieldOK: (String) -> Bool) {
        codes[error.code, default: 0] += 1
        if !ErrorCode.allCases.contains(error.code) || !allowed.contains(error.code) {
            violation("unexpected code \(error.code.rawValue)", frame, label, "\(error)")
        }
        if error.message.isEmpty { violation("empty message", frame, label, "\(error)") }
        if error.code == .invalidArgument {
            if let field = error.field {
                if !fieldOK(field) { violation("invalid_argument field \(field.isEmpty ? "is empty" : "not rooted at data or op")", frame, label, "field \(field.debugDescription): \(error)") }
            } else {
                violation("invalid_argument without a field", frame, label, "\(error)")
            }
        }
        // The failure reply is well-formed and carries the same error.
        let reply = Reply.failure(error)
        if (try? JSONDecoder().decode(ReplyFrame<NoFields>.self, from: reply))?.error != error {
            violation("failure reply does not round-trip", frame, label, printable(reply))
        }
    }

    private mutating func verifyAccepted(_ value: SessionLogRequest, _ frame: Data, _ label: String) {
        if !value.activity.isSession { violation("accepted a noalc session", frame, label, "\(value)") }
        if value.end < value.start { violation("accepted end before start", frame, label, "\(value)") }
        if value.end.milliseconds(since: value.start) > 24 * 3600 * 1000 { violation("accepted more than 24 h", frame, label, "\(value)") }
        if UserID(value.userId.rawValue) == nil { violation("accepted a bad userId", frame, label, value.userId.rawValue.debugDescription) }
        roundTrip(value, "session.log", frame, label)
    }

    private mutating func verifyAccepted(_ value: NoAlcLogRequest, _ frame: Data, _ label: String) {
        if UserID(value.userId.rawValue) == nil { violation("accepted a bad userId", frame, label, value.userId.rawValue.debugDescription) }
        if LocalDay(value.day.description) != value.day { violation("accepted a bad day", frame, label, "\(value.day)") }
        roundTrip(value, "noalc.log", frame, label)
    }

    private mutating func roundTrip<Payload: Codable & Equatable>(_ value: Payload, _ op: String, _ frame: Data, _ label: String) {
        guard let resent = try? WireJSON.encode(RequestFrame(op: op, data: value)) else {
            violation("accepted value does not encode", frame, label, "\(value)")
            return
        }
        switch pipeline(Payload.self, resent) {
        case .success(let again):
            if again != value { violation("wire round trip changes the value", frame, label, "\(value) became \(again)") }
        case .failure(let error):
            violation("accepted value re-encodes into a refused request", frame, label, "\(printable(resent)): \(error)")
        }
    }

    private mutating func violation(_ kind: String, _ frame: Data, _ label: String, _ detail: String) {
        var entry = violations[kind] ?? (0, [])
        entry.count += 1
        if entry.examples.count < 3 { entry.examples.append("[\(label)] \(detail)\n      frame: \(printable(frame, limit: 240))") }
        violations[kind] = entry
    }

    var summary: String {
        let tally = codes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }.joined(separator: " ")
        return "\(frames) frames, \(accepted) payloads accepted, \(tally); slowest \(slowest.seconds) s (\(slowest.label))"
    }

    func report(sourceLocation: SourceLocation = #_sourceLocation) {
        let text = violations.sorted { $0.key < $1.key }.map { kind, entry in
            "● \(kind): \(entry.count)×\n    " + entry.examples.joined(separator: "\n    ")
        }.joined(separator: "\n")
        #expect(violationCount == 0, "\(violationCount) violations\n\(text)\n\(summary)", sourceLocation: sourceLocation)
    }
}
