import CZstd
import Foundation
import Storage

/// How SQLite's log stores an event's envelope: as a zstd frame compressed against a dictionary of
/// the envelopes' own shape (docs/decisions/0006-zstd-envelope-dictionary.md): a page holds more log
/// rows, so a commit writes fewer pages to the WAL and its checkpoint fewer back. What is published and what `events.since`
/// returns are the envelopes as they were made, byte for byte.
///
/// A stored envelope is either JSON (its first byte `{`: rows from before, and what PostgreSQL
/// stores) or a zstd frame (its first byte 0x28, of zstd's magic number); reading takes both, and
/// frames of either dictionary (`Dictionary`). One per store: zstd's contexts belong to one
/// thread, as the store does.
final class EnvelopeCompression {
    /// zstd's level -1: level 1 saves a few more bytes for more time both writing and reading
    /// (decision 0006).
    static let level: Int32 = -1
    /// Larger than any envelope a request can make (PROTOCOL: requests up to 1 MiB): a frame that
    /// claims more is damaged, and is not given the memory it asks for.
    static let largestEnvelope = 16 << 20

    /// From this many envelopes on, `compact` compresses half of them on another core: below it,
    /// waking that core costs more than it saves (decision 0006).
    static let sharedFrom = 64

    private let compressor: OpaquePointer
    private let expander: OpaquePointer
    /// The other core's compressor (zstd's contexts are one thread's at a time), and the serial
    /// queue it works on: whatever is given it, a transaction's half or chunks ahead (`Ahead`).
    private lazy var helper = EnvelopeCompression()
    private lazy var helperQueue = DispatchQueue(label: "envelope-compression", qos: .userInitiated)

    init() {
        compressor = ZSTD_createCCtx()
        expander = ZSTD_createDCtx()
    }

    deinit {
        ZSTD_freeCCtx(compressor)
        ZSTD_freeDCtx(expander)
    }

    /// The bytes to store for `envelope`. Should zstd fail, the envelope itself, which reads back too.
    func compact(_ envelope: Data) -> Data {
        let bound = ZSTD_compressBound(envelope.count)
        var frame = Data(count: bound)
        let size = frame.withUnsafeMutableBytes { output in
            envelope.withUnsafeBytes { input in
                ZSTD_compress_usingCDict(compressor, output.baseAddress, bound, input.baseAddress, input.count, Dictionary.shared.compression)
            }
        }
        guard ZSTD_isError(size) == 0 else { return envelope }
        frame.count = size
        return frame
    }

    /// The bytes to store for each of `envelopes`, in order; from `sharedFrom` on, two threads each
    /// compress half of them.
    func compact(_ envelopes: [Data]) -> [Data] {
        guard envelopes.count >= Self.sharedFrom else { return envelopes.map(compact) }
        let half = envelopes.count / 2
        let secondHalf = onOtherThread(envelopes[half...])
        let firstHalf = envelopes[..<half].map(compact)
        return firstHalf + secondHalf.stored()
    }

    private func onOtherThread(_ envelopes: ArraySlice<Data>) -> OtherThread { OtherThread(helper, envelopes, on: helperQueue) }

    /// A transaction's envelopes compressed on the other core while it still appends them, a chunk
    /// at a time: a planner's step compressing half of them on its own thread once they were all
    /// made kept its loop waiting (decision 0006). A transaction of fewer than a chunk (every
    /// request batch but the largest) gives nothing ahead, and `finish` is `compact`.
    final class Ahead {
        static let chunk = 256
        private let compression: EnvelopeCompression
        private var chunks: [OtherThread] = []
        private var pending: [Data] = []
        /// Envelopes in `chunks`: the first of the transaction's.
        private var given = 0
        /// False once a savepoint took back envelopes already given: `finish` compresses all anew.
        private var valid = true

        init(_ compression: EnvelopeCompression) { self.compression = compression }

        func append(_ envelope: Data) {
            guard valid else { return }
            pending.append(envelope)
            if pending.count == Self.chunk {
                chunks.append(compression.onOtherThread(pending[...]))
                given += pending.count
                pending.removeAll(keepingCapacity: true)
            }
        }

        /// The transaction's envelopes from `count` on were taken back.
        func truncate(to count: Int) {
            if count >= given { pending.removeSubrange((count - given)...) } else { valid = false }
        }

        /// The bytes to store for each of `envelopes`, the transaction's, in order.
        func finish(_ envelopes: [Data]) -> [Data] {
            let ahead = chunks.flatMap { $0.stored() }
            guard valid, ahead.count == given, given <= envelopes.count else { return compression.compact(envelopes) }
            return ahead + compression.compact(Array(envelopes[given...]))
        }
    }

    /// Envelopes compressed on the helper's queue, with the compressor only it uses.
    private final class OtherThread: @unchecked Sendable {
        private let compression: EnvelopeCompression
        private let done = DispatchSemaphore(value: 0)
        private var result: [Data] = []

        init(_ compression: EnvelopeCompression, _ envelopes: ArraySlice<Data>, on queue: DispatchQueue) {
            self.compression = compression
            queue.async { [self] in
                result = envelopes.map(self.compression.compact)
                done.signal()
            }
        }

        /// Once that thread is done.
        func stored() -> [Data] {
            done.wait()
            return result
        }
    }

    /// Appends the envelope `stored` holds to `json`.
    func expand(_ stored: UnsafeRawBufferPointer, into json: inout Data) throws {
        guard let first = stored.first, first != UInt8(ascii: "{") else {
            json.append(contentsOf: stored)
            return
        }
        // ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the two largest values: both fail the bound.
        let size = ZSTD_getFrameContentSize(stored.baseAddress, stored.count)
        guard size <= UInt64(Self.largestEnvelope) else { throw StorageError("a stored envelope is damaged: not a zstd frame of at most 16 MiB") }
        let dictionaryID = ZSTD_getDictID_fromFrame(stored.baseAddress, stored.count)
        guard let dictionary = Dictionary.shared.expansion[dictionaryID] else {
            throw StorageError("a stored envelope is damaged: its frame names zstd dictionary \(dictionaryID), which this build does not have")
        }
        let start = json.count
        json.count += Int(size)
        let written = json.withUnsafeMutableBytes { output in
            ZSTD_decompress_usingDDict(expander, output.baseAddress! + start, Int(size), stored.baseAddress, stored.count, dictionary)
        }
        guard ZSTD_isError(written) == 0, written == Int(size) else {
            json.count = start
            throw StorageError("a stored envelope is damaged: \(String(cString: ZSTD_getErrorName(written)))")
        }
    }

    /// The envelope `stored` holds.
    func expand(_ stored: some ContiguousBytes) throws -> Data {
        var json = Data()
        try stored.withUnsafeBytes { try expand($0, into: &json) }
        return json
    }

    /// zstd's dictionaries, made once per process and shared by every thread (zstd reads them only).
    ///
    /// Frames are written against `content` with `entropyTables` ahead of it, and name it (`id`).
    /// Frames written before name none: they were made against `content` alone, and read back
    /// with it. Without tables, zstd built its three sequence codes' tables afresh for every
    /// envelope (a tiny block gets the predefined ones, each rebuilt): with them, a frame reuses
    /// the dictionary's. Every stored frame depends on these bytes:
    /// they never change; a better dictionary would need an id of its own.
    final class Dictionary: @unchecked Sendable {
        static let shared = Dictionary()
        /// The id frames written with `entropyTables` carry ("LH" as a little-endian number).
        static let id: UInt32 = 19_528
        let compression: OpaquePointer
        /// By the dictionary id a frame names: 0 (none) for frames written against `content` alone.
        let expansion: [UInt32: OpaquePointer]

        private init() {
            let withTables = Self.withTables
            compression = withTables.withUnsafeBytes { ZSTD_createCDict($0.baseAddress, $0.count, EnvelopeCompression.level) }
            expansion = [
                0: Self.content.withUnsafeBytes { ZSTD_createDDict($0.baseAddress, $0.count) },
                Self.id: withTables.withUnsafeBytes { ZSTD_createDDict($0.baseAddress, $0.count) },
            ]
        }

        /// zstd's dictionary format: its magic number, `id`, the entropy tables, then `content`.
        static var withTables: Data { entropyTables + content }

        /// Made once with libzstd's `ZDICT_finalizeDictionary` over `content` (dictionary id `id`,
        /// level −1) from 3,000 envelopes of the seven types below, with random ids, users, times
        /// and values, most of them `session.logged` and the planner's decisions. Tables made from
        /// other samples would do as well (they only need to be fixed); what they save: decision 0006.
        static let entropyTables = Data(base64Encoded: """
            N6Qw7EhMAAAmENCSpAP//////4PazmZttj/74mcppWQ+7ncgpUwypZQSTUhWVU/zAgAAAIOHpTaSdQAABODADZERHQiECZqR0aexIAqCKIxlIBJHgGEG\
            kcgATIkAAAAAZPGBODQeEI6BcCAMCMTAQBAAAPQAAAAAAQAAAAQAAAAIAAAA
            """)!

        /// One envelope of each type, as the services write them, the most frequent last (nearest,
        /// so the cheapest to refer to): what a frame may copy from.
        static let content = Data("""
            {"v":1,"type":"notify","seq":1,"id":"","time":"2026-11-27T12:00:00.000Z","source":"notifier","topic":"notify..workout",\
            "data":{"notificationId":"@2026-11-27T12:00:00Z","seq":1,"userId":"","activity":"workout","title":"Time for your workout",\
            "body":"Time for your daily workout! 💪","category":"workout","actions":[{"id":"open.workout","title":"Start Workout",\
            "opensApp":true}],"deepLink":"lht://open/workout","reminderId":"","scheduledFor":"2026-11-27T12:00:00Z",\
            "sentAt":"2026-11-27T12:00:00.000Z","locale":"en","test":false}}\
            {"v":1,"type":"streak.updated","seq":1,"id":"","time":"2026-11-27T12:00:00.000Z","source":"noalc-streak",\
            "topic":"streak.updated..noalc","data":{"userId":"","asOf":"2026-11-27","policy":"seed","streakDays":1,"rewardsEarned":0,\
            "rewardsUsed":0,"rewardsLost":0,"rewardsAvailable":0,"lastLoggedDay":"2026-11-27","todayLogged":true}}\
            {"v":1,"type":"reminder.changed","seq":1,"id":"","time":"2026-11-27T12:00:00.000Z","source":"reminder-planner",\
            "topic":"reminder.changed..mindfulness","data":{"id":"","userId":"","activity":"mindfulness","time":"07:00",\
            "weekdays":["mon","tue","wed","thu","fri","sat","sun"],"lookbackHours":1,"enabled":true,"title":null,"body":null,\
            "createdAt":"2026-11-27T12:00:00.000Z"}}\
            {"v":1,"type":"reminder.cancelled","seq":1,"id":"","time":"2026-11-27T12:00:00.000Z","source":"reminder-planner",\
            "topic":"reminder.cancelled..mindfulness","data":{"reminderId":"","userId":"","activity":"mindfulness",\
            "at":"2026-11-27T12:00:00Z","localTime":"07:00","day":"2026-11-27","weekday":"fri","windowStart":"2026-11-27T12:00:00Z",\
            "status":"cancelled","cause":""}}\
            {"v":1,"type":"reminder.due","seq":1,"id":"","time":"2026-11-27T12:00:00Z","source":"reminder-planner",\
            "topic":"reminder.due..workout","data":{"reminderId":"","userId":"","activity":"workout","at":"2026-11-27T12:00:00Z",\
            "localTime":"07:00","day":"2026-11-27","weekday":"fri","windowStart":"2026-11-27T12:00:00Z","status":"fired",\
            "timeZone":"Europe/Berlin","locale":"en","title":null,"body":null,"late":false,"test":false}}\
            {"v":1,"type":"noalc.logged","seq":1,"id":"","time":"2026-11-27T12:00:00.000Z","source":"session-logger",\
            "topic":"noalc.logged..noalc","data":{"id":"","userId":"","day":"2026-11-27","level":"steady","source":null,\
            "loggedAt":"2026-11-27T12:00:00.000Z"}}\
            {"v":1,"type":"session.logged","seq":1,"id":"","time":"2026-11-27T12:00:00.000Z","source":"session-logger",\
            "topic":"session.logged..mindfulness","data":{"id":"","userId":"","activity":"mindfulness",\
            "start":"2026-11-27T12:00:00.000Z","end":"2026-11-27T12:00:00.000Z","source":null,"loggedAt":"2026-11-27T12:00:00.000Z"}}
            """.utf8)
    }
}

extension EnvelopeCompression: StoredEnvelopes {
    func storingAhead() -> StoringAhead { Ahead(self) }
}

extension EnvelopeCompression.Ahead: StoringAhead {}
