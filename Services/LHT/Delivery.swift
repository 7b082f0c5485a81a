import ArgumentParser
import Foundation
import LHTClient
import LHTSchema
import Synchronization

// MARK: Cursor

/// The last delivered seq per publisher, in a file only its user can read: `{"notifier":17}`. Each
/// change is written to a temporary file and renamed over it, so the file is always a whole version.
final class DeliveryCursor {
    let url: URL
    private(set) var seqs: [String: Int64]

    init(_ url: URL) throws(Failure) {
        self.url = url
        guard let data = FileManager.default.contents(atPath: url.path) else {
            seqs = [:]
            return
        }
        do {
            seqs = try JSONDecoder().decode([String: Int64].self, from: data)
        } catch {
            throw Failure.local("the cursor \(url.path) cannot be read (\(error)); remove it to start from now")
        }
    }

    func seq(_ service: ServiceName) -> Int64? { seqs[service.rawValue] }

    /// Moves the publisher's cursor to `seq` (never back) and writes the file.
    func advance(_ service: ServiceName, to seq: Int64) throws(Failure) {
        guard seq > (seqs[service.rawValue] ?? -1) else { return }
        seqs[service.rawValue] = seq
        let text = JSONValue.object(seqs.mapValues { .number(Double($0)) }).jsonLine + "\n"
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(ProcessInfo.processInfo.processIdentifier).tmp")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, url.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw Failure.local("cannot write the cursor \(url.path): \(error)")
        }
    }
}

// MARK: Stopping

/// The signal (SIGTERM, SIGINT) that asked a delivering subscriber to stop; 0 while none did. A hand-over
/// under way finishes and its cursor is written first, so stopping never makes a notification come twice.
let stopSignal = Atomic<Int32>(0)

/// Routes SIGTERM and SIGINT to `stopSignal` instead of ending the process at once.
func stopBetweenHandOvers() {
    for number in [SIGTERM, SIGINT] {
        signal(number) { received in stopSignal.store(received, ordering: .relaxed) }
    }
}

/// Ends the command (status 128 + the signal) if a stop was asked for.
func exitIfStopped() throws {
    let number = stopSignal.load(ordering: .relaxed)
    if number != 0 { throw ExitCode(128 + number) }
}

// MARK: Retrying

/// Hands `event` over, retrying with exponential backoff (0.5 s doubling to 30 s) while the target
/// is down; gives up at `deadline` (status 3) or on a refusal not worth retrying (status 4).
func deliverWithRetries(_ event: ReceivedEvent, to target: DeliveryTarget, deadline: Date?) throws(Failure) {
    var delay = 0.5
    var attempt = 1
    while true {
        do {
            try target.deliver(event)
            if attempt > 1 { warn("delivered \(event.topic) #\(event.seq) to \(target.name) after \(attempt) attempts") }
            return
        } catch {
            guard error.retry else { throw Failure.local("\(target.name) refused \(event.topic) #\(event.seq): \(error)") }
            if let deadline, Date().addingTimeInterval(delay) > deadline {
                throw Failure(status: Status.noAnswer, line: "error: \(target.name) did not take \(event.topic) #\(event.seq) "
                    + "within --max-wait (\(attempt) attempts): \(error)")
            }
            warn("\(target.name) failed on \(event.topic) #\(event.seq) (attempt \(attempt)): \(error); retrying in \(delay.formatted()) s")
            let wake = Date().addingTimeInterval(delay)
            while Date() < wake {
                if stopSignal.load(ordering: .relaxed) != 0 { throw Failure(status: 128 + stopSignal.load(ordering: .relaxed), line: "stopped while retrying \(event.topic) #\(event.seq)") }
                Thread.sleep(forTimeInterval: min(0.1, max(0, wake.timeIntervalSinceNow)))
            }
            delay = min(delay * 2, 30)
            attempt += 1
        }
    }
}
