import Foundation
import Testing
import TestSupport
@testable import ZoneRules
import LHTSchema

/// `ZoneRules` reads every zone of the system's tzdata as `zdump -v` and Python's `zoneinfo` do:
/// the offsets on both sides of every change from 1970 through 2037 (the TZif tables), and in 2100
/// and 2400 (the footers' POSIX rules), and no change either of them lacks. `Reference/zone-reference.py`
/// prints what they say (zdump over 1970–2037 is most of its time).
@Suite struct ZoneConformanceTests {
    struct Sample {
        let utc: Int64
        let zdump: Int64
        let zoneinfo: Int64
    }

    /// Each zone's samples in time order, as the script printed them.
    static let reference: Result<[String: [Sample]], ReferenceError> = {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Reference/zone-reference.py")
        let run: ProcessRun
        do {
            let environment = ProcessInfo.processInfo.environment.merging(["TZDIR": TZData.system.directory]) { _, given in given }
            run = try CapturedProcess("/usr/bin/env", ["python3", script.path], environment: environment).finish(timeout: 300)
        } catch { return .failure(ReferenceError(text: "python3: \(error)")) }
        guard run.status == 0 else { return .failure(ReferenceError(text: run.stderr)) }
        var zones: [String: [Sample]] = [:]
        for line in run.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, let utc = Int64(fields[1]), let zdump = Int64(fields[2]), let zoneinfo = Int64(fields[3]) else {
                return .failure(ReferenceError(text: "unreadable line \(line)"))
            }
            zones[String(fields[0]), default: []].append(Sample(utc: utc, zdump: zdump, zoneinfo: zoneinfo))
        }
        return .success(zones)
    }()

    struct ReferenceError: Error { let text: String }

    static let end2037: Int64 = 2_145_916_800  // 2038-01-01T00:00:00Z

    @Test func everyZoneAgreesWithZdumpAndZoneinfo() throws {
        let zones = try Self.reference.get()
        // All of them: Python lists ~600 zones and links; every one with changes since 1970 has samples.
        #expect(zones.count > 300, "only \(zones.count) zones in the reference")
        var mismatches: [String] = [], compared = 0, unreadable: [String] = []
        for (name, samples) in zones.sorted(by: { $0.key < $1.key }) {
            guard let rules = TZData.system.rules(name), let zone = ZoneID(name) else { unreadable.append(name); continue }
            #expect(zone.rules == rules)
            for sample in samples {
                compared += 1
                let offset = rules.offset(at: sample.utc)
                if offset != sample.zdump || offset != sample.zoneinfo {
                    mismatches.append("\(name) \(Instant(secondsSince1970: sample.utc)): \(offset), zdump \(sample.zdump), zoneinfo \(sample.zoneinfo)")
                }
            }
            // The changes zdump reports (a second before and the first second after, offsets differing)
            // are exactly the table's: none missed, none invented.
            let reported = zip(samples, samples.dropFirst())
                .filter { $1.utc == $0.utc + 1 && $1.zdump != $0.zdump && $1.utc < Self.end2037 }.map(\.1.utc)
            let read = rules.transitions(from: 0, through: Self.end2037).map(\.utc)
            if reported != read { mismatches.append("\(name): changes \(Set(reported).symmetricDifference(read).sorted().prefix(4))") }
        }
        #expect(unreadable.isEmpty, "not read: \(unreadable)")
        #expect(compared > 50_000)
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches: \(mismatches.prefix(10).joined(separator: "\n"))")
    }

    /// The reference itself sees what the hand-checked cases say, so a broken script fails here
    /// rather than passing everything.
    @Test func referenceHasTheKnownChanges() throws {
        let zones = try Self.reference.get()
        let berlin = try #require(zones["Europe/Berlin"])
        let spring2026 = Instant(rfc3339: "2026-03-29T01:00:00Z")!.secondsSince1970
        #expect(berlin.contains { $0.utc == spring2026 && $0.zdump == 7200 })
        #expect(berlin.contains { $0.utc == spring2026 - 1 && $0.zdump == 3600 })
        #expect(zones["Europe/Dublin"]?.contains { $0.utc > 13_000_000_000 } == true, "no samples in 2400")
    }
}
