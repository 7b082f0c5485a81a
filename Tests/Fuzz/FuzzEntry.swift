// libFuzzer entry over the wire schema (Shared/Schema): every op's request decoding and validation,
// and event decoding (`ReceivedEvent`). Not a SwiftPM target: `deploy/fuzz` compiles it together with
// the schema's sources with `swiftc -sanitize=fuzzer,address`.
//
// Invariants checked on every input (a violation stops the run with a crash report and the input):
// - nothing traps, hangs or leaks past the sanitizer;
// - a request either decodes or fails with a WireError of a protocol code; `invalid_argument` always
//   names a field (`op`, `data` or a path below it);
// - an accepted request re-encodes, contains no U+0000 in any string, and decodes again;
// - an event that decodes re-encodes and decodes to the same value.
import Foundation

/// One op's request type, decoded and checked.
private struct OpCheck {
    let name: String
    let run: (Data, RequestHead) -> Void

    init<Request, Reply>(_ op: Op<Request, Reply>) {
        name = op.name
        run = { frame, head in checkRequest(Request.self, op: op.name, frame: frame, head: head) }
    }
}

/// Every op of the catalog; start-up checks this table against `Ops.all`, so a new op cannot be missed.
private let checks: [OpCheck] = [
    OpCheck(Ops.health), OpCheck(Ops.eventsSince),
    OpCheck(Ops.sessionLog), OpCheck(Ops.noalcLog), OpCheck(Ops.sessionList), OpCheck(Ops.noalcList), OpCheck(Ops.dailySummary),
    OpCheck(Ops.userPut), OpCheck(Ops.userGet), OpCheck(Ops.reminderPut), OpCheck(Ops.reminderGet), OpCheck(Ops.reminderList),
    OpCheck(Ops.reminderDelete), OpCheck(Ops.reminderUpcoming), OpCheck(Ops.reminderRestore), OpCheck(Ops.reminderTest),
    OpCheck(Ops.clockGet), OpCheck(Ops.clockSet), OpCheck(Ops.clockAdvance),
    OpCheck(Ops.notificationList), OpCheck(Ops.notificationAction),
    OpCheck(Ops.streakGet), OpCheck(Ops.calendarGet),
]

private let checksByName: [String: OpCheck] = {
    let table = Dictionary(uniqueKeysWithValues: checks.map { ($0.name, $0) })
    precondition(Set(table.keys) == Set(Ops.all.map(\.name)), "the fuzz table and Ops.all differ")
    return table
}()

private func violation(_ what: String) -> Never {
    fatalError("fuzz invariant violated: \(what)")
}

private func checkError(_ error: WireError, _ context: String) {
    let allowed: Set<ErrorCode> = [.badJSON, .unsupportedVersion, .invalidArgument]
    guard allowed.contains(error.code) else { violation("\(context): unexpected code \(error.code.rawValue)") }
    if error.code == .invalidArgument {
        guard let field = error.field, field == "op" || field == "data" || field.hasPrefix("data.") else {
            violation("\(context): invalid_argument without a field under data: \(error)")
        }
    }
}

private let nulEscape = Data(#"\u0000"#.utf8)

private func checkRequest<Request: Codable>(_ type: Request.Type, op: String, frame: Data, head: RequestHead) {
    let value: Request
    do {
        value = try decodeRequestData(Request.self, from: frame, head: head)
    } catch {
        checkError(error, op)
        return
    }
    let data: Data
    do {
        data = try WireJSON.encode(value)
    } catch {
        violation("\(op): an accepted request does not encode: \(error)")
    }
    if data.range(of: nulEscape) != nil { violation("\(op): an accepted request carries U+0000: \(String(decoding: data, as: UTF8.self))") }
    var again = Data(#"{"v":1,"op":"#.utf8)
    again.append(try! WireJSON.encode(op))
    again.append(Data(#","data":"#.utf8))
    again.append(data)
    again.append(UInt8(ascii: "}"))
    do {
        let head = try RequestHead(frame: again)
        _ = try decodeRequestData(Request.self, from: again, head: head)
    } catch {
        violation("\(op): an accepted request does not decode again: \(error) — \(String(decoding: again, as: UTF8.self))")
    }
}

private func checkEvent(_ frame: Data) {
    guard let event = try? JSONDecoder().decode(ReceivedEvent.self, from: frame) else { return }
    let encoded: Data
    do {
        encoded = try WireJSON.encode(event)
    } catch {
        violation("event \(event.type): does not encode: \(error)")
    }
    do {
        let again = try JSONDecoder().decode(ReceivedEvent.self, from: encoded)
        if again != event { violation("event \(event.type): changes in a round trip: \(String(decoding: encoded, as: UTF8.self))") }
    } catch {
        violation("event \(event.type): does not decode again: \(error) — \(String(decoding: encoded, as: UTF8.self))")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let frame = Data(bytes: bytes, count: size)
    checkEvent(frame)
    let head: RequestHead
    do {
        head = try RequestHead(frame: frame)
    } catch {
        checkError(error, "head")
        return 0
    }
    // The op the frame names first (as a service would), then every other op's type on the same
    // data, so a mutation of one op's example exercises all the decoders.
    checksByName[head.op]?.run(frame, head)
    for check in checks where check.name != head.op { check.run(frame, head) }
    return 0
}
