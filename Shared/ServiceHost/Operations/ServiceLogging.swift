import ArgumentParser
import Foundation
import Logging

/// `--log-format` (PROTOCOL "Operations").
public enum LogFormat: String, CaseIterable, Sendable {
    /// `<time> <level> <service>: <message> key=value …`, for people.
    case text
    /// One JSON object a line: `time`, `level`, `service`, `message`, then the metadata.
    case json
}

/// How a service logs: `--log-format` and `--log-level`, read before anything logs.
public struct LogSettings: Sendable, Equatable {
    public let format: LogFormat
    public let level: Logger.Level

    public init(format: LogFormat = .text, level: Logger.Level = .info) {
        self.format = format
        self.level = level
    }

    public init(_ common: CommonOptions) throws {
        let format = common.logFormat ?? LogFormat.text.rawValue
        guard let parsedFormat = LogFormat(rawValue: format) else {
            throw ValidationError("--log-format: \"\(format)\" is not text or json")
        }
        let level = common.logLevel ?? Logger.Level.info.rawValue
        guard let parsedLevel = Logger.Level(rawValue: level) else {
            let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--log-level: \"\(level)\" is not one of \(names)")
        }
        self.init(format: parsedFormat, level: parsedLevel)
    }
}

/// Writes whole lines to standard error, one `write` each, so lines of concurrent threads never mix.
final class LogStream: @unchecked Sendable {
    static let standardError = LogStream(descriptor: STDERR_FILENO)

    private let descriptor: Int32
    private let lock = NSLock()

    init(descriptor: Int32) { self.descriptor = descriptor }

    func write(line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        lock.lock()
        defer { lock.unlock() }
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

/// The services' LogHandler: text or JSON lines on standard error (standard output carries only
/// the `ready` line).
public struct ServiceLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let service: String
    let format: LogFormat
    let stream: LogStream
    let now: @Sendable () -> Date

    init(service: String, settings: LogSettings, stream: LogStream = .standardError, now: @escaping @Sendable () -> Date = Date.init) {
        self.service = service
        self.format = settings.format
        self.logLevel = settings.level
        self.stream = stream
        self.now = now
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = self.metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        stream.write(line: Self.format(format, time: now(), level: event.level, service: service, message: event.message.description, metadata: merged))
    }

    /// One log line without its newline.
    static func format(_ format: LogFormat, time: Date, level: Logger.Level, service: String, message: String,
                       metadata: Logger.Metadata) -> String {
        let stamp = rfc3339Milliseconds(time)
        let keys = metadata.keys.sorted()
        switch format {
        case .text:
            var line = "\(stamp) \(level.rawValue) \(service): \(message)"
            for key in keys { line += " \(key)=\(metadata[key]!)" }
            return line
        case .json:
            var line = "{\"time\":\"\(stamp)\",\"level\":\"\(level.rawValue)\",\"service\":"
            appendJSONString(service, to: &line)
            line += ",\"message\":"
            appendJSONString(message, to: &line)
            for key in keys {
                // Metadata never overwrites the four standard fields.
                let name = reserved.contains(key) ? "metadata." + key : key
                line += ","
                appendJSONString(name, to: &line)
                line += ":"
                appendJSON(metadata[key]!, to: &line)
            }
            return line + "}"
        }
    }

    static let reserved: Set<String> = ["time", "level", "service", "message"]

    /// RFC 3339 in UTC with milliseconds: `2026-03-01T07:05:09.042Z`.
    static func rfc3339Milliseconds(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds.quotientAndRemainder(dividingBy: 1000).quotient)
        var fraction = milliseconds % 1000
        if fraction < 0 { fraction += 1000; seconds -= 1 }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }

    static func appendJSON(_ value: Logger.Metadata.Value, to line: inout String) {
        switch value {
        case .string(let text): appendJSONString(text, to: &line)
        case .stringConvertible(let convertible): appendJSONString(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, element) in values.enumerated() {
                if index > 0 { line += "," }
                appendJSON(element, to: &line)
            }
            line += "]"
        case .dictionary(let dictionary):
            line += "{"
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { line += "," }
                appendJSONString(key, to: &line)
                line += ":"
                appendJSON(dictionary[key]!, to: &line)
            }
            line += "}"
        }
    }

    static func appendJSONString(_ text: String, to line: inout String) {
        line += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: line.unicodeScalars.append(scalar)
            }
        }
        line += "\""
    }
}

extension ServiceCommandLine {
    /// Routes every Logger of the process to a `ServiceLogHandler` for `service`, each line with the
    /// `instance` it comes from (PROTOCOL "Cluster"). Once per process.
    public static func bootstrapLogging(service: String, _ settings: LogSettings, instance: String) {
        LoggingSystem.bootstrap { _ in
            var handler = ServiceLogHandler(service: service, settings: settings)
            handler.metadata["instance"] = .string(instance)
            return handler
        }
    }
}
