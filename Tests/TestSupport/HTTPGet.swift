import Foundation

/// A plain HTTP/1.1 GET on loopback: enough to read `/metrics` or Prometheus' API in tests and
/// benchmarks without FoundationNetworking. Returns the body of a 200 response.
public func httpGet(host: String, port: Int, target: String) throws -> [UInt8] {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, host, &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw HarnessError("cannot connect to \(host):\(port)") }
    let request = Array("GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = recv(descriptor, &buffer, buffer.count, 0)
        if count <= 0 { break }
        response += buffer[..<count]
    }
    let separator = Array("\r\n\r\n".utf8)
    guard let end = (0..<max(0, response.count - 3)).first(where: { Array(response[$0..<$0 + 4]) == separator }) else {
        throw HarnessError("no HTTP response from \(host):\(port)\(target)")
    }
    guard response.starts(with: Array("HTTP/1.1 200".utf8)) else {
        throw HarnessError("\(host):\(port)\(target): \(String(decoding: response.prefix(200), as: UTF8.self))")
    }
    return Array(response[(end + 4)...])
}
