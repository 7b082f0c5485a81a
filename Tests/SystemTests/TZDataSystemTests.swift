import Foundation
import LHTSchema
import Testing
import TestSupport

/// A tzdata update reaches a running planner (PROTOCOL.md "Zone rules (tzdata)"): Europe/Berlin
/// compiled with `zic` into a private TZDIR, once without daylight saving time from 2026 on and
/// once with it, replaced under the running executable as an update replaces it. The planner looks
/// every second (`--tzdata-check-seconds 1`).
@Suite struct TZDataSystemTests {
    let tzdir = temporaryDirectory("tzdir")

    /// Europe/Berlin with the EU rules, or with them until 2026 and a fixed offset from then on,
    /// plain CET unless told (and UTC, the planner's default zone).
    static func berlin(daylightSavingFrom2026: Bool, fixedFrom2026: String = "1:00 - CET") -> String {
        """
        Zone Etc/UTC 0 - UTC
        Link Etc/UTC UTC
        Rule EU 1981 max - Mar lastSun 1:00u 1:00 S
        Rule EU 1996 max - Oct lastSun 1:00u 0 -
        Zone Europe/Berlin 1:00 EU CE%sT\(daylightSavingFrom2026 ? "" : " 2026\n\t\(fixedFrom2026)")

        """
    }

    /// Compiles `source` beside the directory and renames the zone and a `tzdata.zi` naming
    /// `version` into it, as a package update replaces files.
    func install(_ source: String, version: String) throws {
        let staging = temporaryDirectory("tzdir-staging")
        let sourceFile = staging.appendingPathComponent("berlin.zi")
        try source.write(to: sourceFile, atomically: true, encoding: .utf8)
        let zic = try CapturedProcess("/usr/sbin/zic", ["-d", staging.appendingPathComponent("out").path, sourceFile.path]).finish()
        try #require(zic.status == 0, "zic: \(zic.stderr)")
        try "# version \(version)\n".write(to: staging.appendingPathComponent("out/tzdata.zi"), atomically: true, encoding: .utf8)
        for directory in ["Europe", "Etc"] {
            try FileManager.default.createDirectory(at: tzdir.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        for name in ["Europe/Berlin", "Etc/UTC", "UTC", "tzdata.zi"] {
            try #require(rename(staging.appendingPathComponent("out/\(name)").path, tzdir.appendingPathComponent(name).path) == 0)
        }
    }

    /// Installs `source` (a `berlin`) as `version` while the planner runs, and waits (up to the
    /// contract's 60 s) until its health names the version and `reminder` has had `changes`
    /// `reminder.changed` events in all.
    func update(_ source: String, version: String, _ rig: PlannerRig, _ reminder: String, changes expected: Int) throws {
        try install(source, version: version)
        try waitUntil(timeout: 60, interval: 0.1, "the planner on tzdata \(version)") {
            try rig.plannerClient.ok("health")["tzdata"]?.stringValue == version
        }
        #expect(try changes(rig, reminder, count: expected) == expected)
    }

    /// (at, status) of the reminder's occurrences in `reminder.upcoming`, by rule day.
    func upcoming(_ rig: PlannerRig, _ reminder: String, days: Int) throws -> [String: String] {
        var result: [String: String] = [:]
        for occurrence in try rig.upcoming("henning", days: days) where occurrence["reminderId"]?.stringValue == reminder {
            result[occurrence["day"]!.stringValue!] = "\(occurrence["at"]!.stringValue!) \(occurrence["status"]!.stringValue!)"
        }
        return result
    }

    /// The `reminder.changed` events of `reminder` received so far.
    func changes(_ rig: PlannerRig, _ reminder: String, count: Int) throws -> Int {
        func matching(_ all: [(topic: String, envelope: JSONValue)]) -> Int {
            all.filter { $0.envelope["type"]?.stringValue == "reminder.changed" && $0.envelope["data"]?["id"]?.stringValue == reminder }.count
        }
        return matching(try rig.events.wait(timeout: 60) { matching($0) >= count })
    }

    @Test func anUpdateWhileRunningMovesUndecidedOccurrencesOnly() throws {
        try install(Self.berlin(daylightSavingFrom2026: false), version: "2026lht-nodst")
        let errors = tzdir.appendingPathComponent("planner.log")
        let rig = try PlannerRig(clock: "2026-03-27T12:00:00Z", extraArguments: ["--tzdata-check-seconds", "1"],
                                 environment: ["TZDIR": tzdir.path], errorLog: errors)
        #expect(try rig.plannerClient.ok("health")["tzdata"]?.stringValue == "2026lht-nodst")
        try rig.user("henning")
        let workout = try rig.reminder("henning", "workout", "07:00")
        #expect(try changes(rig, workout, count: 1) == 1)
        // No summer time in this tzdata: 07:00 stays 06:00Z after the last Sunday of March.
        #expect(try upcoming(rig, workout, days: 5) == [
            "2026-03-28": "2026-03-28T06:00:00Z scheduled", "2026-03-29": "2026-03-29T06:00:00Z scheduled",
            "2026-03-30": "2026-03-30T06:00:00Z scheduled", "2026-03-31": "2026-03-31T06:00:00Z scheduled",
        ])

        // Monday's is decided just before the update that brings summer time back.
        #expect(try rig.advance(to: "2026-03-30T06:30:00Z") == 3)
        try update(Self.berlin(daylightSavingFrom2026: true), version: "2026lht-dst", rig, workout, changes: 2)
        #expect(try upcoming(rig, workout, days: 3) == [
            "2026-03-30": "2026-03-30T06:00:00Z fired",
            "2026-03-31": "2026-03-31T05:00:00Z scheduled", "2026-04-01": "2026-04-01T05:00:00Z scheduled",
        ])

        // Tuesday's is decided at 05:00Z; the next update moves it to 06:00Z, after the clock: it
        // must not fire again.
        #expect(try rig.advance(to: "2026-03-31T05:30:00Z") == 1)
        try update(Self.berlin(daylightSavingFrom2026: false), version: "2026lht-nodst2", rig, workout, changes: 3)
        #expect(try upcoming(rig, workout, days: 2) == [
            "2026-03-31": "2026-03-31T05:00:00Z fired", "2026-04-01": "2026-04-01T06:00:00Z scheduled",
        ])
        #expect(try rig.advance(to: "2026-03-31T07:00:00Z") == 0)
        #expect(try rig.advance(to: "2026-04-01T06:00:00Z") == 1)
        let due = try rig.events.of("reminder.due", count: 5).map { $0["data"]!["at"]!.stringValue! }
        #expect(due == ["2026-03-28T06:00:00Z", "2026-03-29T06:00:00Z", "2026-03-30T06:00:00Z", "2026-03-31T05:00:00Z", "2026-04-01T06:00:00Z"])

        // The zone goes away: its last rules stay, requests go on, and the user is logged once.
        try FileManager.default.removeItem(at: tzdir.appendingPathComponent("Europe/Berlin"))
        func goneLines() -> Int {
            ((try? String(contentsOf: errors, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("gone from tzdata") }.count
        }
        try waitUntil(timeout: 60, interval: 0.1, "the zone logged as gone") { goneLines() > 0 }
        Thread.sleep(forTimeInterval: 2)  // two more checks pass, which must not log it again
        #expect(goneLines() == 1)
        try rig.user("henning")
        #expect(try upcoming(rig, workout, days: 1) == ["2026-04-01": "2026-04-01T06:00:00Z fired"])
        #expect(try changes(rig, workout, count: 3) == 3)
    }

    /// A planner on summer-time Berlin with henning's `activities` at 07:00, each decided on
    /// Tuesday 2026-03-31 at 05:00Z with the clock left at 05:30Z; then an update without summer
    /// time moves that day to 06:00Z. Returns the reminders' ids.
    func tuesdayMovedPastTheClock(_ activities: [String]) throws -> (PlannerRig, [String]) {
        try install(Self.berlin(daylightSavingFrom2026: true), version: "2026lht-dst")
        let rig = try PlannerRig(clock: "2026-03-31T04:00:00Z", extraArguments: ["--tzdata-check-seconds", "1"],
                                 environment: ["TZDIR": tzdir.path])
        try rig.user("henning")
        let ids = try activities.map { try rig.reminder("henning", $0, "07:00") }
        #expect(try rig.advance(to: "2026-03-31T05:30:00Z") == activities.count)
        try update(Self.berlin(daylightSavingFrom2026: false), version: "2026lht-nodst", rig, ids[0], changes: 2)
        return (rig, ids)
    }

    /// The moved day stays decided when the planner is killed after the update and started again
    /// before the new instant; a reminder given another time meanwhile has a new day.
    @Test func aMovedDecidedDayOutlivesARestart() throws {
        let (rig, ids) = try tuesdayMovedPastTheClock(["workout", "mindfulness"])
        let (workout, mindfulness) = (ids[0], ids[1])
        rig.planner.kill()
        try rig.planner.restart()
        try rig.reconnect()
        #expect(try upcoming(rig, workout, days: 1) == ["2026-03-31": "2026-03-31T05:00:00Z fired"])
        // Now 07:30 (06:30Z, after the clock): a new time, so Tuesday's occurrence at it is new.
        _ = try rig.reminder("henning", "mindfulness", "07:30", id: mindfulness)
        #expect(try rig.advance(to: "2026-03-31T07:00:00Z") == 1)
        #expect(try rig.advance(to: "2026-04-01T06:00:00Z") == 1)
        // Every decision event stored, both runs': each day of each reminder once.
        let names = [workout: "workout", mindfulness: "mindfulness"]
        let decisions = try rig.plannerClient.ok("events.since", ["limit": 1000])["events"]!.arrayValue
            .filter { ["reminder.due", "reminder.suppressed", "reminder.skipped", "reminder.missed"].contains($0["type"]!.stringValue!) }
            .map { "\($0["type"]!.stringValue!) \(names[$0["data"]!["reminderId"]!.stringValue!]!) \($0["data"]!["at"]!.stringValue!)" }
        #expect(decisions.sorted() == [
            "reminder.due mindfulness 2026-03-31T05:00:00Z", "reminder.due mindfulness 2026-03-31T06:30:00Z",
            "reminder.due workout 2026-03-31T05:00:00Z", "reminder.due workout 2026-04-01T06:00:00Z",
        ])
    }

    /// A second update that moves the moved day later still (to 07:00Z) leaves it decided too.
    @Test func aDayMovedTwiceStaysDecided() throws {
        let (rig, ids) = try tuesdayMovedPastTheClock(["workout"])
        try update(Self.berlin(daylightSavingFrom2026: false, fixedFrom2026: "0:00 - GMT"), version: "2026lht-gmt", rig, ids[0], changes: 3)
        #expect(try rig.advance(to: "2026-03-31T06:30:00Z") == 0)
        #expect(try rig.advance(to: "2026-04-01T07:00:00Z") == 1)
        let due = try rig.events.of("reminder.due", count: 2).map { $0["data"]!["at"]!.stringValue! }
        #expect(due == ["2026-03-31T05:00:00Z", "2026-04-01T07:00:00Z"])
    }
}
