import Foundation
import Synchronization

/// The system's tzdata: the TZif files under a directory (`TZDIR`, else `/usr/share/zoneinfo`),
/// which a distribution's tzdata package updates. A zone is read when first asked for and kept;
/// `refresh` notices files replaced since (an update) and reads them again.
///
/// Thread-safe: requests on any thread validate zone names through it.
public final class TZData: Sendable {
    public let directory: String
    private let state: Mutex<State>

    private struct Loaded {
        var rules: ZoneRules
        /// The file as it was when `rules` were read, or last looked at.
        var stamp: FileStamp?
        /// Why the file no longer gives rules, while it does not.
        var lost: String?
    }

    private struct State {
        var zones: [String: Loaded] = [:]
        var version: String
        var versionStamp: FileStamp?
    }

    /// What a file's `stat` says changes when it is replaced or rewritten.
    struct FileStamp: Equatable {
        let device: UInt64, inode: UInt64, size: Int64, modifiedSeconds: Int, modifiedNanoseconds: Int

        init?(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modifiedSeconds = info.st_mtim.tv_sec
            modifiedNanoseconds = info.st_mtim.tv_nsec
        }
    }

    /// The directory `TZDIR` names, as glibc and Python's `zoneinfo` take it.
    public static let system = TZData(directory: ProcessInfo.processInfo.environment["TZDIR"].flatMap { $0.isEmpty ? nil : $0 }
                                        ?? "/usr/share/zoneinfo")

    public init(directory: String) {
        self.directory = directory
        let versionPath = directory + "/tzdata.zi"
        state = Mutex(State(version: Self.readVersion(versionPath), versionStamp: FileStamp(versionPath)))
    }

    /// The `# version` line of `tzdata.zi`, as read at start or by the last `refresh`, else "unknown".
    public var version: String { state.withLock { $0.version } }

    /// The rules of zone `name` (`Europe/Berlin`), or nil if the directory has no such zone. A zone
    /// once read keeps its rules until `refresh` reads newer ones.
    public func rules(_ name: String) -> ZoneRules? {
        if let known = state.withLock({ $0.zones[name]?.rules }) { return known }
        guard Self.isZoneName(name) else { return nil }
        let path = directory + "/" + name
        // Read outside the lock: one slow disk must not hold every request's zone lookup.
        guard let stamp = FileStamp(path), case .success(let rules) = Self.read(path) else { return nil }
        return state.withLock { state in
            if let known = state.zones[name] { return known.rules }
            state.zones[name] = Loaded(rules: rules, stamp: stamp)
            return rules
        }
    }

    /// The zones read so far with their rules now, and the reason for each whose file was lost.
    public func snapshot() -> (rules: [String: ZoneRules], lost: [String: String]) {
        state.withLock { state in (state.zones.mapValues(\.rules), state.zones.compactMapValues(\.lost)) }
    }

    /// What `refresh` found.
    public struct Refresh: Sendable {
        /// Zones whose file changed and whose rules are now different: the rules before and now.
        public var changed: [String: (before: ZoneRules, now: ZoneRules)] = [:]
        /// Zones whose file went away or no longer reads as TZif: they keep their last rules.
        /// Each is reported once, until its file changes again.
        public var lost: [String: String] = [:]
        /// The version, if `tzdata.zi` changed.
        public var newVersion: String?

        public var isEmpty: Bool { changed.isEmpty && lost.isEmpty && newVersion == nil }

        public init() {}
    }

    /// Looks at `tzdata.zi` and the file of every zone read so far (a `stat` each) and reads again
    /// those that were replaced or rewritten. Cheap when nothing changed. What changed is reported
    /// to this caller only; a service that shares the process with others compares `snapshot`s.
    @discardableResult
    public func refresh() -> Refresh {
        var result = Refresh()
        let versionPath = directory + "/tzdata.zi"
        let versionStamp = FileStamp(versionPath)
        if versionStamp != state.withLock({ $0.versionStamp }) {
            let version = Self.readVersion(versionPath)
            state.withLock { state in
                if state.version != version { result.newVersion = version }
                state.version = version
                state.versionStamp = versionStamp
            }
        }
        let stamps = state.withLock { $0.zones.mapValues(\.stamp) }
        for (name, old) in stamps {
            let path = directory + "/" + name
            let stamp = FileStamp(path)
            guard stamp != old else { continue }
            let read: Result<ZoneRules, TZifError>? = stamp == nil ? nil : Self.read(path)
            state.withLock { state in
                guard var loaded = state.zones[name] else { return }
                loaded.stamp = stamp
                switch read {
                case .success(let rules):
                    if rules != loaded.rules { result.changed[name] = (loaded.rules, rules) }
                    loaded.rules = rules
                    loaded.lost = nil
                case .failure(let error):
                    loaded.lost = "\(error)"
                case nil:
                    loaded.lost = "no file \(path)"
                }
                result.lost[name] = loaded.lost
                state.zones[name] = loaded
            }
        }
        return result
    }

    /// Reads one TZif file; any failure is a value.
    static func read(_ path: String) -> Result<ZoneRules, TZifError> {
        guard let data = FileManager.default.contents(atPath: path) else { return .failure(.truncated) }
        return Result { () throws(TZifError) in try ZoneRules(tzif: [UInt8](data)) }
    }

    private static func readVersion(_ path: String) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "unknown" }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 256)) ?? Data()
        let firstLine = String(decoding: head.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        guard firstLine.hasPrefix("# version ") else { return "unknown" }
        let version = firstLine.dropFirst("# version ".count).trimmingCharacters(in: .whitespaces)
        return version.isEmpty ? "unknown" : version
    }

    /// IANA names only, as relative paths that stay inside the directory: `Europe/Berlin`,
    /// `Etc/GMT+5`, `America/Port-au-Prince`, never `..`, an absolute path or an empty component.
    /// Like Python's `zoneinfo`, not the files beside the zones: `localtime` (the machine's zone),
    /// `posixrules`, and the `posix/` and `right/` copies.
    static func isZoneName(_ name: String) -> Bool {
        let components = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 64, !["localtime", "posixrules", "posix", "right"].contains(components[0]) else { return false }
        return components.allSatisfy { component in
            !component.isEmpty && component.utf8.first != UInt8(ascii: "-") && component.utf8.allSatisfy(isNameByte)
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "+"): true
        default: false
        }
    }
}
