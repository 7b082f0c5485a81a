import Foundation
import LHTSchema
import ServiceHost
import Storage
import Synchronization

/// Why a stored row could not be read: the first column that did not parse.
struct UnreadableRow: Error, ExpressibleByStringLiteral {
    let column: String
    init(stringLiteral column: String) { self.column = column }
}

/// Rows that do not read back as what they should be (a damaged file, a row written by hand): each
/// is skipped, so one bad row cannot take every read down; logged and counted in `health`
/// (`unreadableRows`) once per row, however often it is read. Reads behind the log report from the
/// projection's thread, writes from the loop's.
final class UnreadableRows: @unchecked Sendable {
    static let counter = "unreadableRows"
    private unowned let host: ServiceHost
    private let reported = Mutex<Set<String>>([])

    init(host: ServiceHost) {
        self.host = host
        host.count(Self.counter, by: 0)
    }

    /// The value `parse` reads from `row`, or nil (reported) when it cannot. Column 0 (the id) names the row.
    func read<Value>(_ row: SQLRow, table: String, _ parse: (SQLRow) -> Result<Value, UnreadableRow>) -> Value? {
        switch parse(row) {
        case .success(let value): return value
        case .failure(let problem):
            let key = row.text(0) ?? "?"
            report(table: table, key: key, column: problem.column)
            return nil
        }
    }

    /// The error of a request that cannot go on without the row (a duplicate whose first receipt is unreadable).
    func failure(_ table: String, key: String, reason column: String) -> WireError {
        report(table: table, key: key, column: column)
        return WireError(.internal, "stored \(table) row \(key) is unreadable (\(column))")
    }

    private func report(table: String, key: String, column: String) {
        guard reported.withLock({ $0.insert("\(table)/\(key)").inserted }) else { return }
        host.countFromAnyThread(Self.counter)
        host.logger.error("unreadable stored row skipped", metadata: ["table": "\(table)", "row": "\(key)", "column": "\(column)"])
    }
}
