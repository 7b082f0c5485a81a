import Foundation
import Synchronization

/// The store's database cannot be reached now: nothing of the request was stored, and it may be
/// sent again (`unavailable`).
public struct StoreUnavailable: Error, CustomStringConvertible {
    public let reason: String
    /// Why, as a label of `lht_storage_errors_total{reason}` (`cause`).
    public let label: String
    public var description: String { "the database is unavailable: \(reason)" }

    public init(reason: String, label: String = Cause.databaseUnreachable) {
        self.reason = reason
        self.label = label
    }
}

extension StoreUnavailable {
    /// The labels of `lht_storage_errors_total{reason}`: a fixed set.
    public enum Cause {
        public static let diskFull = "disk_full"
        public static let diskFailing = "disk_failing"
        public static let databaseUnreachable = "database_unreachable"
        public static let projectionBehind = "projection_behind"
    }

    /// Why `error` means the store is unavailable (nothing stored; the request may be repeated):
    /// a full disk, or a database that cannot be reached. Nil for any other error.
    public static func reason(_ error: Error) -> String? { cause(of: error)?.message }

    /// As `reason`, with the label it is counted under. A full or failing disk is a dependency that is
    /// down, as a database out of reach is: ENOSPC, EDQUOT and EIO from the log's file, SQLite's
    /// SQLITE_FULL and SQLITE_IOERR.
    public static func cause(of error: Error) -> (label: String, message: String)? {
        switch error {
        case let error as StoreUnavailable:
            return (error.label, error.description)
        case let error as StoreOutage:
            return error.outage
        case let error as StorageError where error.errno == ENOSPC || error.errno == EDQUOT:
            return (Cause.diskFull, "the disk is full (\(error))")
        case let error as StorageError where error.errno == EIO:
            return (Cause.diskFailing, "the disk failed to read or write (\(error))")
        default:
            return nil
        }
    }

    private static let lastLogged = Mutex<[String: Date]>([:])

    /// Whether an outage of `label` should be logged now: at most once a minute for each, in a process,
    /// since a full disk fails every request until space is back.
    public static func shouldLog(_ label: String, now: Date = Date()) -> Bool {
        lastLogged.withLock { logged in
            guard logged[label].map({ now.timeIntervalSince($0) >= 60 }) ?? true else { return false }
            logged[label] = now
            return true
        }
    }
}

/// A backend's error that may mean the store is unavailable (a lost connection, a full disk): its
/// label and message, or nil where it is the statement's own.
public protocol StoreOutage: Error {
    var outage: (label: String, message: String)? { get }
    /// Whether the failed statement may have ended its whole transaction, so that a savepoint
    /// cannot isolate it and a batch must stop there (`Transaction.eachIsolated`'s `isFatal`).
    var endsTransaction: Bool { get }
}

extension StoreOutage {
    public var endsTransaction: Bool { false }
}

extension StoreUnavailable {
    /// `StoreOutage.endsTransaction` of a backend's error; false for any other.
    public static func endsTransaction(_ error: Error) -> Bool { (error as? StoreOutage)?.endsTransaction ?? false }
}

/// The store cannot start as configured (a malformed URL, a wrong password): exit 2.
public struct StoreConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}
