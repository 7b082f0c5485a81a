import Foundation
import Testing
import TestSupport
@testable import ZoneRules
import LHTSchema

/// A private tzdata directory: zones are read on first use, and `refresh` notices a zone file
/// replaced, rewritten, removed or broken, and a new `tzdata.zi` version.
@Suite struct TZDataTests {
    let directory = temporaryDirectory("tzdata")

    func put(_ name: String, _ bytes: [UInt8]) throws {
        let url = directory.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        // Written beside and renamed over, as dpkg replaces a package's files.
        let temporary = url.appendingPathExtension("new")
        try Data(bytes).write(to: temporary)
        #expect(rename(temporary.path, url.path) == 0)
    }

    func system(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: TZData.system.directory + "/" + name)))
    }

    @Test func namesAndVersion() throws {
        try put("Europe/Berlin", system("Europe/Berlin"))
        try put("tzdata.zi", Array("# version 2099a\n# ddeps\n".utf8))
        let tzdata = TZData(directory: directory.path)
        #expect(tzdata.version == "2099a")
        #expect(tzdata.rules("Europe/Berlin") == TZData.system.rules("Europe/Berlin"))
        for name in ["Europe/Paris", "Europe", "../tzdata/Europe/Berlin", "/Europe/Berlin", "Europe//Berlin", "tzdata.zi"] {
            #expect(tzdata.rules(name) == nil, "\(name)")
        }
        #expect(TZData(directory: directory.appendingPathComponent("none").path).version == "unknown")
    }

    @Test func refreshSeesAReplacedZone() throws {
        try put("Europe/Berlin", system("Europe/Berlin"))
        try put("tzdata.zi", Array("# version 2099a\n".utf8))
        let tzdata = TZData(directory: directory.path)
        let berlin = try #require(tzdata.rules("Europe/Berlin"))
        #expect(tzdata.refresh().isEmpty)

        // The same rules written again: looked at, nothing changed.
        try put("Europe/Berlin", system("Europe/Berlin"))
        #expect(tzdata.refresh().isEmpty)

        try put("Europe/Berlin", system("Asia/Tokyo"))
        let replaced = tzdata.refresh()
        #expect(Array(replaced.changed.keys) == ["Europe/Berlin"])
        #expect(replaced.changed["Europe/Berlin"]?.before == berlin)
        #expect(replaced.changed["Europe/Berlin"]?.now == TZData.system.rules("Asia/Tokyo"))
        #expect(tzdata.rules("Europe/Berlin") == TZData.system.rules("Asia/Tokyo"))
        #expect(replaced.newVersion == nil && tzdata.refresh().isEmpty)

        try put("tzdata.zi", Array("# version 2099b\n".utf8))
        #expect(tzdata.refresh().newVersion == "2099b")
        #expect(tzdata.version == "2099b")
    }

    /// A zone whose file goes away or breaks keeps its last rules, and is reported once.
    @Test func aLostZoneKeepsItsRules() throws {
        try put("Europe/Berlin", system("Europe/Berlin"))
        try put("Asia/Tokyo", system("Asia/Tokyo"))
        let tzdata = TZData(directory: directory.path)
        let berlin = try #require(tzdata.rules("Europe/Berlin")), tokyo = try #require(tzdata.rules("Asia/Tokyo"))
        try FileManager.default.removeItem(at: directory.appendingPathComponent("Europe/Berlin"))
        try put("Asia/Tokyo", Array(system("Asia/Tokyo").prefix(100)))
        let lost = tzdata.refresh()
        #expect(Set(lost.lost.keys) == ["Europe/Berlin", "Asia/Tokyo"])
        #expect(lost.changed.isEmpty)
        #expect(tzdata.refresh().isEmpty)
        #expect(tzdata.rules("Europe/Berlin") == berlin && tzdata.rules("Asia/Tokyo") == tokyo)
        // Back again with other rules: read.
        try put("Europe/Berlin", system("Europe/Lisbon"))
        #expect(Array(tzdata.refresh().changed.keys) == ["Europe/Berlin"])
    }
}
