import Foundation
import LHTSchema
import Synchronization
import Testing
import ZeroMQ

/// systemd (docs/protocol-additions.md, Stop): readiness and stopping on the notify socket, and the units verify.
@Suite struct SystemdSystemTests {
    /// sd_notify's datagram protocol: READY=1 once ready, STOPPING=1 at stop, to $NOTIFY_SOCKET.
    @Test func readyAndStoppingGoToTheNotifySocket() throws {
        let directory = temporaryDirectory("lht-notify")
        let path = directory.appendingPathComponent("notify").path
        let socket = try DatagramListener(path: path)
        let logger = try ServiceProcess("session-logger", arguments: ["--metrics", "off"], environment: ["NOTIFY_SOCKET": path])
        let ready = socket.receive(timeout: 5)
        #expect(ready?.split(separator: "\n").contains("READY=1") == true, "\(String(describing: ready))")
        #expect(ready?.contains("MAINPID=\(logger.process.pid)") == true)
        #expect(logger.terminate(timeout: 5).status == 0)
        #expect(socket.receive(timeout: 2) == "STOPPING=1")
    }

    @Test func systemdUnitsVerify() throws {
        try Tools.require("systemd-analyze")
        let units = repositoryRoot.appendingPathComponent("deploy/systemd")
        let directory = temporaryDirectory("lht-units")
        var names: [String] = []
        for service in ["session-logger", "reminder-planner", "notifier", "noalc-streak"] {
            let name = "lht-\(service).service"
            let text = try String(contentsOf: units.appendingPathComponent(name), encoding: .utf8)
            for required in ["Type=notify", "Restart=on-failure", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                             "StateDirectory=lht/\(service) lht/keys", "StateDirectoryMode=0700", "--keys %S/lht/keys", "--metrics ${LHT_"] {
                #expect(text.contains(required), "\(name): \(required)")
            }
            // verify checks that ExecStart's binary exists: point it at the built one.
            try text.replacingOccurrences(of: "/usr/local/bin/", with: BuildProducts.directory.path + "/")
                .write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
            names.append(directory.appendingPathComponent(name).path)
        }
        // The templates for several instances over PostgreSQL, verified as instance "a".
        for service in ["session-logger", "reminder-planner", "notifier", "noalc-streak"] {
            let text = try String(contentsOf: units.appendingPathComponent("lht-\(service)@.service"), encoding: .utf8)
            for required in ["Type=notify", "Restart=on-failure", "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                             "EnvironmentFile=/etc/lht/\(service)@%i.env", "--database ${LHT_DATABASE}", "--instance %H:%i",
                             "StateDirectory=lht/\(service)@%i lht/keys", "StateDirectoryMode=0700", "--keys %S/lht/keys", "--metrics ${LHT_"] {
                #expect(text.contains(required), "lht-\(service)@.service: \(required)")
            }
            let instance = directory.appendingPathComponent("lht-\(service)@a.service")
            try text.replacingOccurrences(of: "/usr/local/bin/", with: BuildProducts.directory.path + "/")
                .write(to: instance, atomically: true, encoding: .utf8)
            names.append(instance.path)
        }
        let result = try Tools.run("systemd-analyze", ["verify"] + names)
        #expect(result.status == 0, "\(result.output)")
        // An unknown or misspelt option is only a warning to systemd: none may appear.
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(result.output)")
    }
}
