import Foundation
import Testing
import TestSupport
@testable import ZoneRules
import LHTSchema

private func rules(_ name: String) throws -> ZoneRules { try #require(TZData.system.rules(name), "\(name) missing from the tzdata") }
private func at(_ text: String) -> Int64 { Instant(rfc3339: text)!.secondsSince1970 }
/// The offset in force at each instant.
private func offsets(_ rules: ZoneRules, _ instants: [String]) -> [Int64] { instants.map { rules.offset(at: at($0)) } }
private func systemFile(_ name: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: TZData.system.directory + "/" + name)))
}

/// Hand-checked offsets of the system's tzdata, as ZoneRules reads them.
@Suite struct ZoneRulesTests {
    @Test func berlinSpringsForwardAt0100UTC() throws {
        let berlin = try rules("Europe/Berlin")
        #expect(offsets(berlin, ["2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z", "2026-10-25T00:59:59Z", "2026-10-25T01:00:00Z"])
                == [3600, 7200, 7200, 3600])
        #expect(berlin.footer == POSIXTZ("CET-1CEST,M3.5.0,M10.5.0/3"))
    }

    @Test func lordHoweShiftsByHalfAnHour() throws {
        let lordHowe = try rules("Australia/Lord_Howe")
        // Spring: 02:00 +10:30 on the first Sunday of October; autumn: 02:00 +11 on the first Sunday of April.
        #expect(offsets(lordHowe, ["2026-10-03T15:29:59Z", "2026-10-03T15:30:00Z", "2026-04-04T14:59:59Z", "2026-04-04T15:00:00Z"])
                == [37_800, 39_600, 39_600, 37_800])
    }

    @Test func saoPauloHasNoDaylightTimeSince2019() throws {
        let saoPaulo = try rules("America/Sao_Paulo")
        #expect(saoPaulo.offset(at: at("2019-02-17T01:59:59Z")) == -7200)
        #expect(saoPaulo.transitions(from: at("2019-02-18T00:00:00Z"), through: at("2400-01-01T00:00:00Z")).isEmpty)
        for year in [2020, 2026, 2037, 2100, 2400] {
            #expect(saoPaulo.offset(at: at("\(year)-01-15T12:00:00Z")) == -10_800)
        }
    }

    @Test func sydneyHasSummerInJanuary() throws {
        let sydney = try rules("Australia/Sydney")
        for year in [2026, 2100, 2400] {
            #expect(offsets(sydney, ["\(year)-01-15T00:00:00Z", "\(year)-07-15T00:00:00Z"]) == [39_600, 36_000])
        }
    }

    /// Irish Standard Time is the summer's: the footer's "daylight" time is winter, an hour behind.
    @Test func dublinHasNegativeDaylightTime() throws {
        let dublin = try rules("Europe/Dublin")
        #expect(dublin.footer?.standardOffset == 3600)
        #expect(dublin.footer?.daylight?.offset == 0)
        for year in [2026, 2100, 2400] {
            #expect(offsets(dublin, ["\(year)-01-15T12:00:00Z", "\(year)-07-15T12:00:00Z"]) == [0, 3600])
        }
        #expect(offsets(dublin, ["2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z"]) == [0, 3600])
    }

    @Test func kolkataIsFiveAndAHalfHoursAhead() throws {
        let kolkata = try rules("Asia/Kolkata")
        for text in ["1970-01-01T00:00:00Z", "2026-06-01T00:00:00Z", "2400-06-01T00:00:00Z"] {
            #expect(kolkata.offset(at: at(text)) == 19_800)
        }
    }

    @Test func instantLocalUsesTheRules() throws {
        let zone = try #require(ZoneID("Europe/Berlin"))
        let local = Instant(rfc3339: "2026-03-29T01:30:00Z")!.local(in: zone)
        #expect(local.day == LocalDay("2026-03-29") && local.minuteOfDay == 3 * 60 + 30)
    }
}

@Suite struct POSIXTZTests {
    @Test func centralEuropeanRule() throws {
        let rule = try #require(POSIXTZ("CET-1CEST,M3.5.0,M10.5.0/3"))
        #expect(rule.standardOffset == 3600 && rule.daylight?.offset == 7200)
        #expect(rule.transitions(in: 2026...2026).map(\.utc) == [at("2026-03-29T01:00:00Z"), at("2026-10-25T01:00:00Z")])
        #expect(rule.offset(at: at("2026-07-01T00:00:00Z")) == 7200)
        #expect(rule.offset(at: at("2026-12-31T23:30:00Z")) == 3600)
    }

    @Test func quotedNamesAndMinutes() throws {
        let lordHowe = try #require(POSIXTZ("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"))
        #expect(lordHowe.standardOffset == 37_800 && lordHowe.daylight?.offset == 39_600)
        #expect(POSIXTZ("<-03>3") == POSIXTZ(standardOffset: -10_800, daylight: nil))
    }

    /// Nuuk's rule starts at −1:00, i.e. 23:00 on the Saturday before.
    @Test func negativeRuleTime() throws {
        let nuuk = try #require(POSIXTZ("<-02>2<-01>,M3.5.0/-1,M10.5.0/0"))
        #expect(nuuk.transitions(in: 2026...2026).first?.utc == at("2026-03-29T01:00:00Z"))
    }

    @Test func julianDays() throws {
        // J60 is March 1st in every year; 59 counts from 0 with February 29th, so it is that day in 2024.
        let julian = try #require(POSIXTZ("AAA0BBB,J60/0,J300/0"))
        #expect(julian.transitions(in: 2024...2024).first?.utc == at("2024-03-01T00:00:00Z"))
        #expect(julian.transitions(in: 2025...2025).first?.utc == at("2025-03-01T00:00:00Z"))
        let zeroBased = try #require(POSIXTZ("AAA0BBB,59/0,300/0"))
        #expect(zeroBased.transitions(in: 2024...2024).first?.utc == at("2024-02-29T00:00:00Z"))
    }

    /// RFC 8536's extension: daylight time all year (`0/0,J365/25`), and hours up to 167.
    @Test func daylightAllYear() throws {
        let always = try #require(POSIXTZ("EST5EDT,0/0,J365/25"))
        for text in ["2026-01-01T06:00:00Z", "2026-07-01T00:00:00Z", "2026-12-31T23:00:00Z", "2400-02-29T12:00:00Z"] {
            #expect(always.offset(at: at(text)) == -14_400, "\(text)")
        }
        #expect(POSIXTZ("AAA3BBB,M3.2.0/167,M11.1.0") != nil)
        #expect(POSIXTZ("AAA3BBB,M3.2.0/168,M11.1.0") == nil)
    }

    @Test(arguments: ["", "CE", "CET", "CET-1CEST,M13.1.0,M10.5.0", "CET-1CEST,M3.5.0", "CET-1CEST,M3.5.0,M10.5.0/3x",
                      "CET-1CEST,M3.0.0,M10.5.0", "CET-1CEST,J0,J10", "CET-1CEST,366,1", "<CE>-1", "CET-25", "CET-1:60"])
    func malformedRulesAreRefused(text: String) {
        #expect(POSIXTZ(text) == nil, "\(text.debugDescription) was read")
    }
}

/// Malformed, cut or unusual TZif files are errors, never traps.
@Suite struct TZifReadingTests {
    /// A TZif file from its parts: a version 1 block, or the same table in both blocks and a footer.
    static func tzif(version: UInt8, times: [Int64], types: [UInt8], offsets: [Int32], leapCount: Int = 0, footer: String = "") -> [UInt8] {
        func be(_ value: Int64, _ size: Int) -> [UInt8] { (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        func block(_ timeSize: Int) -> [UInt8] {
            var bytes = Array("TZif".utf8) + [version == 1 ? 0 : UInt8(ascii: "0") + version] + Array(repeating: 0, count: 15)
            for count in [0, 0, leapCount, times.count, offsets.count, 4] { bytes += be(Int64(count), 4) }
            bytes += times.flatMap { be($0, timeSize) } + types
            for offset in offsets { bytes += be(Int64(offset), 4) + [0, 0] }
            bytes += Array("ABC\0".utf8) + Array(repeating: 0, count: leapCount * (timeSize + 4))
            return bytes
        }
        return version == 1 ? block(4) : block(4) + block(8) + Array("\n\(footer)\n".utf8)
    }

    @Test func smallVersion3File() throws {
        let bytes = Self.tzif(version: 3, times: [0, 1000], types: [1, 0], offsets: [3600, 7200], footer: "<+01>-1")
        let rules = try ZoneRules(tzif: bytes)
        #expect(rules.offset(at: -1) == 3600)    // before the first transition: time type 0
        #expect(rules.offset(at: 0) == 7200)
        #expect(rules.offset(at: 999) == 7200)
        #expect(rules.offset(at: 1000) == 3600)
        #expect(rules.offset(at: at("2400-01-01T00:00:00Z")) == 3600)
    }

    /// Version 1 has no 64-bit block and no footer; a real file with its version byte cleared
    /// reads its 32-bit table, which agrees with the 64-bit one from 1970 through 2037.
    @Test func versionOneReadsThe32BitTable() throws {
        var berlin = try systemFile("Europe/Berlin")
        let full = try ZoneRules(tzif: berlin)
        berlin[4] = 0
        let old = try ZoneRules(tzif: berlin)
        #expect(old.footer == nil)
        let changes = full.transitions(from: 0, through: at("2038-01-01T00:00:00Z"))
        #expect(changes.count > 100)
        for change in changes {
            #expect(old.offset(at: change.utc - 1) == change.before && old.offset(at: change.utc) == change.after)
        }
        #expect(try ZoneRules(tzif: Self.tzif(version: 1, times: [100], types: [1], offsets: [0, -3600])).offset(at: 100) == -3600)
    }

    /// `zic -b slim` leaves every transition its footer implies out of the table (Berlin's end in
    /// 1996): the footer gives them, the same as the fat file's table through 2037 and beyond.
    @Test func slimFileReadsAsTheFatOne() throws {
        let directory = temporaryDirectory("zic")
        let source = directory.appendingPathComponent("berlin.zi")
        try """
            Rule EU 1977 1980 - Apr Sun>=1 1:00u 1:00 S
            Rule EU 1977 only - Sep lastSun 1:00u 0 -
            Rule EU 1978 only - Oct 1 1:00u 0 -
            Rule EU 1979 1995 - Sep lastSun 1:00u 0 -
            Rule EU 1981 max - Mar lastSun 1:00u 1:00 S
            Rule EU 1996 max - Oct lastSun 1:00u 0 -
            Zone Europe/Berlin 1:00 EU CE%sT

            """.write(to: source, atomically: true, encoding: .utf8)
        var read: [String: ZoneRules] = [:]
        for bloat in ["slim", "fat"] {
            let zic = try CapturedProcess("/usr/sbin/zic", ["-b", bloat, "-d", directory.appendingPathComponent(bloat).path, source.path]).finish()
            try #require(zic.status == 0, "zic: \(zic.stderr)")
            read[bloat] = try ZoneRules(tzif: [UInt8](Data(contentsOf: directory.appendingPathComponent("\(bloat)/Europe/Berlin"))))
        }
        let slim = try #require(read["slim"]), fat = try #require(read["fat"])
        let through2400 = at("2400-12-31T00:00:00Z")
        #expect(slim.transitions(from: 0, through: through2400).map(\.utc) == fat.transitions(from: 0, through: through2400).map(\.utc))
        // The table holds the footer's changes through 2100; later ones are the footer's alone.
        #expect(slim.transitions(from: 0, through: through2400).count == 2 * (2100 - 1977 + 1))
        for hour in stride(from: Int64(0), to: through2400, by: 7 * 86_400 + 3_600) where slim.offset(at: hour) != fat.offset(at: hour) {
            Issue.record("\(Instant(secondsSince1970: hour)): slim \(slim.offset(at: hour)), fat \(fat.offset(at: hour))")
            break
        }
    }

    @Test func everyCutOfARealFileIsAnError() throws {
        let berlin = try systemFile("Europe/Berlin")
        #expect(throws: Never.self) { try ZoneRules(tzif: berlin) }
        for length in 0..<berlin.count {
            #expect(throws: TZifError.self) { try ZoneRules(tzif: Array(berlin[..<length])) }
        }
    }

    @Test func malformedFilesAreErrors() throws {
        func error(_ bytes: [UInt8]) -> TZifError? {
            do { _ = try ZoneRules(tzif: bytes); return nil } catch { return error }
        }
        var wrongMagic = Self.tzif(version: 2, times: [], types: [], offsets: [0])
        wrongMagic[0] = UInt8(ascii: "X")
        #expect(error(wrongMagic) == .notTZif)
        #expect(error(Array("not a zone at all, but long enough to hold a TZif header".utf8)) == .notTZif)
        #expect(error(Self.tzif(version: 2, times: [0], types: [2], offsets: [0, 3600])) == .invalid("time type 2 of 2"))
        #expect(error(Self.tzif(version: 2, times: [10, 5], types: [0, 0], offsets: [0])) == .invalid("transition times out of order"))
        #expect(error(Self.tzif(version: 2, times: [], types: [], offsets: [])) == .invalid("counts"))
        #expect(error(Self.tzif(version: 2, times: [], types: [], offsets: [Int32.min])) == .invalid("offset -2147483648"))
        #expect(error(Self.tzif(version: 2, times: [], types: [], offsets: [0], leapCount: 1)) == .leapSeconds)
        #expect(error(Self.tzif(version: 2, times: [], types: [], offsets: [0], footer: "CET-1CEST,M3.5.0")) == .badFooter("CET-1CEST,M3.5.0"))
        var badVersion = Self.tzif(version: 2, times: [], types: [], offsets: [0])
        badVersion[4] = UInt8(ascii: "9")
        #expect(error(badVersion) == .invalid("version byte 57"))
        var hugeCount = Self.tzif(version: 2, times: [], types: [], offsets: [0])
        hugeCount[32...35] = [0x7F, 0xFF, 0xFF, 0xFF]
        #expect(error(hugeCount) == .invalid("count 2147483647"))
    }
}
