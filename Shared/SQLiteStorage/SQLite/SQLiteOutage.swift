import GRDB
import Storage

/// SQLite's SQLITE_FULL and SQLITE_IOERR: a full or failing disk, a dependency that is down.
extension DatabaseError: StoreOutage {
    public var outage: (label: String, message: String)? {
        switch resultCode {
        case .SQLITE_FULL:
            (StoreUnavailable.Cause.diskFull, "the disk is full: SQLite could not write the database (\(message ?? "database or disk is full"))")
        case .SQLITE_IOERR:
            (StoreUnavailable.Cause.diskFailing, "the disk failed: SQLite could not read or write the database (\(message ?? "disk I/O error"))")
        default:
            nil
        }
    }

    /// Any SQLite error: SQLite rolls a whole transaction back on its own for some (a full disk, an
    /// I/O error, memory), so an upstream batch stops and is tried again rather than skip an event.
    public var endsTransaction: Bool { true }
}
