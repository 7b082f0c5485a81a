import Foundation
import ArgumentParser
import HTTPGateway
import LHTClient
import LHTSchema
import ServiceHost
import Testing

/// The pure parts of the gateway: the frame it sends for a body, the status of a reply, cursors and flags.
@Suite struct ForwardingTests {
    func text(_ data: Data?) -> String? { data.map { String(decoding: $0, as: UTF8.self) } }

    @Test func aBodyBecomesTheDataOfAFrameSentAsTheCaller() {
        let alice = UserID("alice")
        #expect(text(Forwarding.requestFrame(op: "session.log", body: Data(#"{"activity":"workout"}"#.utf8), as: alice))
                == #"{"v":1,"op":"session.log","as":"alice","data":{"userId":"alice","activity":"workout"}}"#)
        // A userId given is kept (the service refuses another user's), an empty body is {}.
        #expect(text(Forwarding.requestFrame(op: "user.get", body: Data(#" {"userId":"bob"}"#.utf8), as: alice))
                == #"{"v":1,"op":"user.get","as":"alice","data": {"userId":"bob"}}"#)
        #expect(text(Forwarding.requestFrame(op: "reminder.list", body: Data(), as: alice))
                == #"{"v":1,"op":"reminder.list","as":"alice","data":{"userId":"alice"}}"#)
        #expect(text(Forwarding.requestFrame(op: "health", body: Data(), as: nil)) == #"{"v":1,"op":"health","data":{}}"#)
        // Only a member of the body itself counts as naming a user, null or written with escapes too.
        #expect(text(Forwarding.requestFrame(op: "user.put", body: Data(#"{"profile":{"userId":"bob"},"tags":["userId"]}"#.utf8), as: alice))
                == #"{"v":1,"op":"user.put","as":"alice","data":{"userId":"alice","profile":{"userId":"bob"},"tags":["userId"]}}"#)
        #expect(text(Forwarding.requestFrame(op: "user.get", body: Data(#"{"userId":null}"#.utf8), as: alice))
                == #"{"v":1,"op":"user.get","as":"alice","data":{"userId":null}}"#)
        #expect(text(Forwarding.requestFrame(op: "user.get", body: Data(#"{"a":"\"}","user\u0049d":"bob"}"#.utf8), as: alice))
                == #"{"v":1,"op":"user.get","as":"alice","data":{"a":"\"}","user\u0049d":"bob"}}"#)
        #expect(text(Forwarding.requestFrame(op: "user.get", body: Data("{ }".utf8), as: alice)) == #"{"v":1,"op":"user.get","as":"alice","data":{"userId":"alice" }}"#)
        // Not one JSON value: nothing is sent. A value that is no object goes as it is (the service names the field).
        #expect(Forwarding.requestFrame(op: "session.log", body: Data(#"{"a":1}}"#.utf8), as: alice) == nil)
        // An op that needs escapes is written as a JSON string.
        #expect(text(Forwarding.requestFrame(op: "a\"b/c", body: Data(), as: nil)) == #"{"v":1,"op":"a\"b/c","data":{}}"#)
        #expect(Forwarding.namedUser(in: Data(#"{"userId":"bob","n":1}"#.utf8)) == UserID("bob"))
        #expect(Forwarding.namedUser(in: Data(#"{"user\u0049d":"bob"}"#.utf8)) == UserID("bob"))
        #expect(Forwarding.namedUser(in: Data(#"{"userId":"b o b"}"#.utf8)) == nil)
        #expect(Forwarding.namedUser(in: Data(#"{"userId":7}"#.utf8)) == nil)
        #expect(Forwarding.namedUser(in: Data("[]".utf8)) == nil)
        #expect(Forwarding.requestFrame(op: "session.log", body: Data(#"{"a":1},"as":"bob"#.utf8), as: alice) == nil)
        #expect(text(Forwarding.requestFrame(op: "session.log", body: Data("[1]".utf8), as: alice)) == #"{"v":1,"op":"session.log","as":"alice","data":[1]}"#)
    }

    @Test func opsMapToTheirServiceAndRepliesToStatuses() {
        #expect(Forwarding.service(of: "session.log") == .sessionLogger)
        #expect(Forwarding.service(of: "notification.action") == .notifier)
        #expect(Forwarding.service(of: "health") == nil)
        #expect(Forwarding.service(of: "events.since") == nil)
        #expect(Forwarding.service(of: "nope") == nil)
        let statuses: [ErrorCode: Int] = [.badJSON: 400, .unsupportedVersion: 400, .invalidArgument: 400, .unknownOp: 404, .notFound: 404,
                                          .conflict: 409, .unauthorized: 403, .unavailable: 503, .internal: 500]
        for (code, status) in statuses { #expect(Forwarding.status(of: Reply.failure(WireError(code, "x"))) == status) }
        #expect(Forwarding.status(of: Reply.success(rawData: Data("{}".utf8))) == 200)
        #expect(Forwarding.status(of: Data("garbage".utf8)) == 500)
        #expect(Forwarding.status(of: Data(#"{"v":1,"ok":true,"data":{"#.utf8)) == 500)
        #expect(Forwarding.status(of: Data(#"{"ok":true,"v":1}"#.utf8)) == 200)
        #expect(Forwarding.status(of: Data(#"{"v":1,"ok":false,"error":{"code":"teapot","message":"x"}}"#.utf8)) == 500)
        #expect(Forwarding.status(of: Data(#"{"v":1,"error":{"code":"not_found","message":"x"}}"#.utf8)) == 500)
    }

    @Test func cursorsCarryEachPublishersSeq() throws {
        var cursor = EventCursor()
        cursor[.notifier] = 12
        cursor[.reminderPlanner] = 3
        #expect(cursor.description == "0.3.12.0")
        #expect(EventCursor("0.3.12.0") == cursor)
        for bad in ["", "1.2.3", "1.2.3.4.5", "1.-2.3.4", "a.b.c.d", "1..3.4", "1.2.3.4 "] { #expect(EventCursor(bad) == nil, "\(bad)") }
        #expect(try EventSelection(types: nil).types == ["notify"])
        #expect(try EventSelection(types: "streak.updated,notify").publishers == [.notifier, .noalcStreak])
        #expect(throws: EventSelectionError.self) { try EventSelection(types: "notify,heartbeat") }
        let selection = try EventSelection(types: "notify")
        #expect(selection.wants(type: "notify", topic: "notify.alice.noalc", user: UserID("alice")!))
        #expect(!selection.wants(type: "notify", topic: "notify.alicex.noalc", user: UserID("alice")!))
    }

    @Test func nonLoopbackNeedsTLSAndKeysUnlessInsecure() throws {
        func settings(_ arguments: [String]) throws -> GatewaySettings { try GatewaySettings(GatewayOptions.parse(arguments + ["--metrics", "off"])) }
        #expect(throws: (any Error).self) { try settings(["--http", "0.0.0.0:7380"]) }
        #expect(throws: (any Error).self) { try settings(["--http", "nonsense"]) }
        #expect(throws: (any Error).self) { try settings(["--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.key"]) }
        #expect(throws: (any Error).self) { try settings(["--tls-cert", "/etc/hostname"]) }
        let insecure = try settings(["--http", "0.0.0.0:0", "--insecure"])
        #expect(insecure.host == "0.0.0.0" && insecure.port == 0)
        let local = try settings(["--notifier-api", "tcp://127.0.0.1:9,tcp://127.0.0.1:10"])
        #expect(local.host == "127.0.0.1" && local.port == 7380)
        #expect(local.upstreams[.notifier]?.api == ["tcp://127.0.0.1:9", "tcp://127.0.0.1:10"])
        #expect(local.upstreams[.sessionLogger]?.events == ["tcp://127.0.0.1:7302"])
    }

    /// Every flag the gateway declares may come from its `LHT_*` variable: the names are read from the
    /// declarations, and are the ones the gateway has always taken.
    @Test func everyDeclaredFlagHasItsVariable() throws {
        let upstreams = ServiceName.allCases.flatMap { [$0.flag(.api), $0.flag(.events)] }
        #expect(Set(GatewayOptions.flagNames) == Set(["http", "keys", "metrics", "tls-cert", "tls-key", "allow-origin", "web-dir", "insecure",
                                                      "keepalive-seconds", "log-format", "log-level"] + upstreams))
        #expect(GatewayOptions.flagNames.count == Set(GatewayOptions.flagNames).count)
        // An upstream flag, the switch and a plain option, each from its variable; a flag given wins.
        let arguments = ServiceCommandLine.withEnvironment(["--http", "127.0.0.1:7390"], flags: GatewayOptions.flagNames, environment: [
            "LHT_HTTP": "127.0.0.1:1", "LHT_STREAK_EVENTS": "tcp://127.0.0.1:9", "LHT_INSECURE": "1", "LHT_KEEPALIVE_SECONDS": "7"])
        let options = try GatewayOptions.parse(arguments)
        #expect(options.http == "127.0.0.1:7390" && options.streakEvents == "tcp://127.0.0.1:9")
        #expect(options.insecure && options.keepaliveSeconds == 7)
    }
}
