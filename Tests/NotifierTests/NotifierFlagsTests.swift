import ArgumentParser
import Foundation
import LHTClient
import Notifier
import ServiceHost
import Testing
import TestSupport

/// PROTOCOL "Cluster", the flags as the notifier reads them (it has the most upstream flags):
/// `--database`, `--instance`, and upstream endpoints as lists of instances.
@Suite struct NotifierFlagsTests {
    let directory = temporaryDirectory("lht-cluster-flags")

    /// The notifier's settings (it has the most upstream flags) from `arguments` and `environment`, as its main reads them.
    func notifier(_ arguments: [String], environment: [String: String] = [:]) throws -> NotifierSettings {
        let arguments = ServiceCommandLine.withEnvironment(arguments + ["--data-dir", directory.path], flags: NotifierOptions.flagNames,
                                                           environment: environment)
        return try NotifierSettings(NotifierOptions.parse(arguments))
    }

    /// The line a service's main prints for what `body` throws (after `error: `); "" when it throws nothing.
    func failure(_ body: () throws -> NotifierSettings) -> String {
        do {
            _ = try body()
            return ""
        } catch {
            return (error as? ValidationError)?.message ?? (error as? EndpointError)?.description ?? NotifierOptions.message(for: error)
        }
    }

    @Test func everyUpstreamFlagAndVariableTakesAListOfInstances() throws {
        let settings = try notifier(["--planner-api", "tcp://127.0.0.1:7311,tcp://10.0.0.2:7311", "--session-logger-api=ipc:///tmp/a,inproc://b"],
                                    environment: ["LHT_PLANNER_EVENTS": "tcp://127.0.0.1:7312,tcp://10.0.0.2:7312", "LHT_PLANNER_API": "tcp://127.0.0.1:1"])
        #expect(settings.plannerAPI == ["tcp://127.0.0.1:7311", "tcp://10.0.0.2:7311"])  // the flag wins over its variable
        #expect(settings.plannerEvents == ["tcp://127.0.0.1:7312", "tcp://10.0.0.2:7312"])
        #expect(settings.sessionLoggerAPI == ["ipc:///tmp/a", "inproc://b"])
        #expect(try notifier([]).sessionLoggerAPI == ["tcp://127.0.0.1:7301"])
    }

    @Test(arguments: ["tcp://127.0.0.1:7301,", ",tcp://127.0.0.1:7301", "tcp://127.0.0.1:7301,,tcp://127.0.0.1:7302", "tcp://127.0.0.1:7301,http://h:1", ""])
    func anEmptyOrUnusableElementNamesTheFlag(_ value: String) {
        let message = failure { try notifier(["--session-logger-api", value]) }
        #expect(message.hasPrefix("--session-logger-api: \"\(value == "tcp://127.0.0.1:7301,http://h:1" ? "http://h:1" : value)\""), "\(message)")
        #expect(failure { try notifier([], environment: ["LHT_PLANNER_EVENTS": value]) }.contains("--planner-events"))
    }

    @Test func databaseIsAPostgreSQLURLFromTheFlagOrLHT_DATABASE() throws {
        #expect(try notifier([]).service.database == nil)
        let url = "postgresql://lht:pw@db:5432/lht?sslmode=require"
        #expect(try notifier(["--database", url]).service.database == url)
        #expect(try notifier([], environment: ["LHT_DATABASE": "postgres://db/lht"]).service.database == "postgres://db/lht")
    }

    @Test func aMalformedDatabaseURLNamesTheFlagButNotThePassword() {
        #expect(failure { try notifier(["--database", "mysql://lht:s3cret@db/lht"]) }
            == #"--database: "mysql://lht:***@db/lht" is not a PostgreSQL URL postgresql://user[:password]@host[:port]/dbname"#)
        for url in ["lht:s3cret@db/lht", "postgresql:/lht:s3cret@db", "pg://db/lht?user=lht&password=s3cret&sslmode=disable",
                    "pg://lht:s3c@ret@db/lht", "pg://lht:s3cret@db?password=s3cret"] {
            let message = failure { try notifier([], environment: ["LHT_DATABASE": url]) }
            #expect(message.hasPrefix("--database: ") && !message.contains("s3c"), "\(message)")
        }
        #expect(CommonOptions.withoutPassword("pg://db/lht?user=lht&password=s3cret&sslmode=disable") == "pg://db/lht?user=lht&password=***&sslmode=disable")
    }

    @Test func theInstanceIsTheFlagOrLHT_INSTANCEElseHostnameAndPid() throws {
        var name = [CChar](repeating: 0, count: 256)
        #expect(gethostname(&name, 255) == 0)
        let hostname = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(try notifier([]).service.instance == "\(hostname):\(getpid())")
        #expect(try notifier(["--instance", "notifier-b"]).service.instance == "notifier-b")
        #expect(try notifier([], environment: ["LHT_INSTANCE": "notifier-c"]).service.instance == "notifier-c")
        #expect(failure { try notifier(["--instance", "two words"]) }.hasPrefix("--instance: "))
        #expect(failure { try notifier(["--instance", "tab\there"]) }.hasPrefix("--instance: "))
        #expect(failure { try notifier([], environment: ["LHT_INSTANCE": ""]) }.contains("--instance"))
    }
}
