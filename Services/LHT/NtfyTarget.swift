import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LHTClient
import LHTSchema
import Synchronization

/// An ntfy topic URL, `<server>/<topic>`: the server (with any base path) and the topic.
struct NtfyTopic {
    let server: URL
    let topic: String
    let text: String

    init(_ text: String) throws(ValidationError) {
        let invalid = ValidationError("--ntfy: \"\(text)\" is not an ntfy topic URL such as https://ntfy.sh/my-lht")
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false, url.query == nil, url.fragment == nil else { throw invalid }
        let topic = url.lastPathComponent
        guard (1...64).contains(topic.count),
              topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { throw invalid }
        self.topic = topic
        server = url.deletingLastPathComponent()
        self.text = text
    }

    /// ntfy's priorities: 1-5 or their names.
    static func priority(_ text: String) -> Int? {
        if let number = Int(text), (1...5).contains(number) { return number }
        return ["min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5][text.lowercased()]
    }
}

/// `--ntfy`: ntfy's JSON publish, a POST to the server's root with {topic, message, title, tags, priority, click, actions}.
/// JSON rather than the header form because titles carry UTF-8 (umlauts, emoji), which HTTP headers do not.
struct NtfyTarget: DeliveryTarget {
    let topic: NtfyTopic
    let priority: Int
    private let session: URLSession

    init(topic: NtfyTopic, priority: Int) {
        self.topic = topic
        self.priority = priority
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 15
        configuration.timeoutIntervalForResource = 30
        session = URLSession(configuration: configuration)
    }

    var name: String { "ntfy \(topic.text)" }

    /// An emoji tag (ntfy shows a tag that is an emoji short code as the emoji) and the activity itself.
    static func tags(_ notification: LHTSchema.Notification) -> [String] {
        let emoji = switch notification.activity {
        case .mindfulness: "lotus_position"
        case .workout: "muscle"
        case .noalc: "droplet"
        }
        return [emoji, notification.activity.rawValue] + (notification.test ? ["test"] : [])
    }

    /// ntfy `view` actions (at most three): `open.*` opens the deep link; a NoAlc level opens
    /// `lht://noalc?day=<targetDay>&level=<level>`, the app logs it (no callback endpoint is exposed).
    static func actions(_ notification: LHTSchema.Notification) -> [JSONValue] {
        notification.actions.prefix(3).map { action in
            var url = notification.deepLink
            if action.id.hasPrefix("noalc."), let day = notification.targetDay {
                url = "lht://noalc?day=\(day)&level=\(action.id.dropFirst("noalc.".count))"
            }
            return .object(["action": .string("view"), "label": .string(action.title), "url": .string(url), "clear": .bool(true)])
        }
    }

    static func message(_ notification: LHTSchema.Notification, topic: String, priority: Int) -> JSONValue {
        var message: [String: JSONValue] = [
            "topic": .string(topic), "title": .string(notification.title), "message": .string(notification.body),
            "tags": .array(tags(notification).map(JSONValue.string)), "priority": .number(Double(priority)),
            "click": .string(notification.deepLink),
        ]
        let actions = actions(notification)
        if !actions.isEmpty { message["actions"] = .array(actions) }
        return .object(message)
    }

    func deliver(_ event: ReceivedEvent) throws(DeliveryError) {
        guard case .notify(let notification) = event.data else { return }
        var request = URLRequest(url: topic.server)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("lht/\(LHT.configuration.version)", forHTTPHeaderField: "User-Agent")
        if let token = environment["LHT_NTFY_TOKEN"], !token.isEmpty {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        request.httpBody = Data(Self.message(notification, topic: topic.topic, priority: priority).jsonLine.utf8)
        let outcome = Mutex<(status: Int?, body: Data?, error: String?)?>(nil)
        let done = DispatchSemaphore(value: 0)
        session.dataTask(with: request) { data, response, error in
            outcome.withLock { $0 = ((response as? HTTPURLResponse)?.statusCode, data, error.map { "\($0.localizedDescription)" }) }
            done.signal()
        }.resume()
        done.wait()
        let result = outcome.withLock { $0 }!
        guard let status = result.status else {
            throw DeliveryError(description: "\(topic.server.absoluteString) did not answer: \(result.error ?? "no response")", retry: true)
        }
        guard (200..<300).contains(status) else {
            let body = result.body.map { String(decoding: $0.prefix(200), as: UTF8.self) } ?? ""
            // 5xx, 408 and 429 pass; any other refusal (a bad token, a bad message) will not.
            throw DeliveryError(description: "\(topic.server.absoluteString) answered HTTP \(status) \(body)",
                                retry: status >= 500 || status == 408 || status == 429)
        }
    }
}
