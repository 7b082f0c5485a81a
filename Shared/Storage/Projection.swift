import Foundation
import LHTSchema

/// Tables derived from a service's log alone (the session logger's sessions and NoAlc entries):
/// the queryable view of records whose durable copy is the log row.
///
/// A projection lives in a file of its own that is never synced: a request waits for one sync, of
/// the log, and the projection's pages (random b-tree leaves: every user's index, every record's
/// id) stay in the page cache until the kernel writes them back, so a page touched many times is
/// written once. The live path writes a projection's rows in the transaction that appends their
/// event, so reads see them at once; `replay` writes the same rows from a logged event, for the
/// events a projection file is behind by (a `kill -9` between the two files' commits), or all of
/// them for a file rebuilt (new, from an older layout, or suspect after a reboot).
public struct Projection: Sendable {
    /// Creates the projection's tables; the migrations are recorded in the projection's file.
    public let migrations: [Migration]
    /// Writes the rows one logged event (its seq and data) makes, exactly as the live path wrote
    /// them; nil for a projection with no rows of the service's own log, which has nothing to read back.
    public let replay: (@Sendable (_ seq: Int64, _ data: EventData, _ sql: StoreConnection) throws -> Void)?
    /// The event types `replay` writes rows for, where they are known: applying a commit behind the
    /// log skips the others without decoding them. Nil: every type may write rows.
    public let eventTypes: Set<String>?

    public init(migrations: [Migration], eventTypes: Set<String>? = nil,
                replay: (@Sendable (_ seq: Int64, _ data: EventData, _ sql: StoreConnection) throws -> Void)?) {
        self.migrations = migrations
        self.eventTypes = eventTypes
        self.replay = replay
    }

    /// No tables, only the upstream cursors, which live in the projection file: for a follower whose
    /// copies are durable and to which an upstream event applied again changes nothing (the streak
    /// service's days keep the newest seq; the notifier knows every occurrence it decided). Moving a
    /// cursor then writes nothing to the log's file, and a lost cursor only means reading again.
    public static let cursorsOnly = Projection(migrations: [], replay: nil)
}
