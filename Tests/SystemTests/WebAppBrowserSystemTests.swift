import Foundation
import LHTSchema
import Testing

/// What the browser test needs beyond the services: the gateway, chromium with its driver, Selenium.
enum BrowserTestPrerequisites {
    static var gateway: URL { BuildProducts.executable("http-gateway") }
    static var gatewayBuilt: Bool { FileManager.default.isExecutableFile(atPath: gateway.path) }

    /// What is missing for the browser itself, as the line that says how to get it; nil: nothing.
    static func browserMissing() -> String? {
        let missing = ["/usr/bin/chromium", "/usr/bin/chromedriver"].filter { !FileManager.default.isExecutableFile(atPath: $0) }
        let selenium = (try? runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import selenium"]).status) == 0
        guard !missing.isEmpty || !selenium else { return nil }
        return "missing \((missing + (selenium ? [] : ["python3's selenium"])).joined(separator: ", ")): deploy/install-prerequisites --browser installs them"
    }

    /// Where the screenshots go: under LHT_TEST_ARTEFACTS when set, else a directory in /tmp that is kept.
    static func artefactDirectory() -> URL {
        let stamp = String(Instant.now().description.prefix(19)).replacingOccurrences(of: ":", with: "")
        let base = ProcessInfo.processInfo.environment["LHT_TEST_ARTEFACTS"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory
        let directory = base.appendingPathComponent("lht-webapp-browser-\(stamp)-\(UUID().uuidString.prefix(4))")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}

/// The web app in a real browser (Tests/Browser/webapp_test.py: headless chromium through Selenium),
/// against the real services with keys and the real gateway with a token from `lht tokens add`.
@Suite(.enabled(if: BrowserTestPrerequisites.gatewayBuilt, "no http-gateway executable beside the tests to serve the web app"),
       .disabled(if: SystemTestBackend.isPostgreSQL, "the web app does not depend on the storage: the SQLite pass runs it"))
struct WebAppBrowserSystemTests {
    /// Sign in; a session cancels the upcoming reminder (its cause shown) and restore brings it back;
    /// a live notification's quick action logs a check-in the calendar shows; a wrong token brings
    /// back the sign-in; German for a browser that asks for de. A screenshot per step.
    @Test func theWebAppInABrowser() throws {
        if let missing = BrowserTestPrerequisites.browserMissing() {
            Issue.record("\(missing)")
            return
        }
        let system = try LHTSystem(services: [.planner, .notifier, .streak], keys: true)
        // The browser logs at its own clock: the planner's manual clock moves to now, so that the
        // page's "today" and the planner's agree.
        try system.setClock(Instant.now().description)
        let keys = system.keys!
        let added = try runLHT(["tokens", "add", "browser", "--keys", keys.path])
        let token = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard added.status == 0, token.hasPrefix("lht_") else { throw HarnessError("lht tokens add: \(added.stdout) \(added.stderr)") }

        let gateway = try startGateway(system, keys: keys)
        defer { _ = gateway.terminate(timeout: 5) }
        guard let address = firstMatch(#"http=(\S+)"#, in: gateway.output) else {
            throw HarnessError("no http= in the gateway's ready line: \(gateway.output)")
        }

        let artefacts = BrowserTestPrerequisites.artefactDirectory()
        print("web app browser test: screenshots in \(artefacts.path)")
        let script = repositoryRoot.appendingPathComponent("Tests/Browser/webapp_test.py")
        let browser = try userProcess(URL(fileURLWithPath: "/usr/bin/env"), [
            "python3", script.path, "--url", "http://\(address)/", "--token", token, "--artefacts", artefacts.path,
        ]).finish(timeout: 300)
        print(browser.stdout)
        #expect(browser.status == 0, "webapp_test.py failed (screenshots in \(artefacts.path)): \(browser.stderr) — gateway: \(gateway.errors.suffix(2000))")
        #expect(browser.stdout.contains("all steps passed"))
        guard browser.status == 0 else { return }
        for step in ["01-sign-in", "02-signed-in", "03-session-cancels-reminder", "04-restored", "05-notification",
                     "06-check-in-in-calendar", "07-wrong-token", "08-german"] {
            #expect(FileManager.default.fileExists(atPath: artefacts.appendingPathComponent("\(step).png").path), "no screenshot \(step).png")
        }
    }

    /// http-gateway on a free loopback port, with the services' keys, following every service; the
    /// web app from this checkout.
    private func startGateway(_ system: LHTSystem, keys: URL) throws -> CapturedProcess {
        let planner = system.services[.planner]!, notifier = system.services[.notifier]!, streak = system.services[.streak]!
        let process = try userProcess(BrowserTestPrerequisites.gateway, [
            "--http", "127.0.0.1:0", "--metrics", "off", "--keys", keys.path,
            "--web-dir", repositoryRoot.appendingPathComponent("Services/HTTPGateway/Web").path,
            "--session-logger-api", system.logger.api, "--session-logger-events", system.logger.events,
            "--planner-api", planner.api, "--planner-events", planner.events,
            "--notifier-api", notifier.api, "--notifier-events", notifier.events,
            "--streak-api", streak.api, "--streak-events", streak.events,
        ])
        try process.waitForOutput("ready http-gateway ", timeout: 30)
        return process
    }
}
