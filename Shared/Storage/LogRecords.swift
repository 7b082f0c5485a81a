import Foundation
import LHTSchema

/// How a log's table stores envelopes where not as they are (SQLite's compression): what reading
/// the log and appending to it need of it.
public protocol StoredEnvelopes: AnyObject {
    /// Appends the envelope `stored` holds, as it was published, to `json`.
    func expand(_ stored: UnsafeRawBufferPointer, into json: inout Data) throws
    /// Stores one transaction's envelopes, started ahead while its body appends them.
    func storingAhead() -> StoringAhead
}

/// One transaction's envelopes on their way into the log's table.
public protocol StoringAhead: AnyObject {
    func append(_ envelope: Data)
    /// Forgets the envelopes after the first `count` (a savepoint rolled back).
    func truncate(to count: Int)
    /// The envelopes as the table stores them.
    func finish(_ envelopes: [Data]) -> [Data]
}

/// A log whose records are a file of their own (SQLite's event file): every record in it is committed.
public protocol RecordFile: AnyObject {
    var identity: RecordID { get }
    var lastSeq: Int64 { get }
    /// Calls `body` with each record after `seq` through `last`, in order, until it returns false.
    /// The buffers are valid only inside `body`.
    func forEach(after seq: Int64, through last: Int64,
                 _ body: (_ seq: Int64, _ topic: UnsafeRawBufferPointer, _ envelope: UnsafeRawBufferPointer) throws -> Bool) throws
}
