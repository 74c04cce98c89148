import Dispatch
import Foundation
import Transport

/// The loopback channel through which CLI commands reach the node running on their data
/// directory: one request line in ("status", "peers", "presence", "sync", "fetch PATH", "login PROOF"), one JSON line out. Its port and
/// the node's pid are written to `node.json` in the data directory while the node runs.
final class ControlServer: @unchecked Sendable {
    private let listener: TCPListener
    private let node: Node

    /// Longest request line accepted.
    static let maxRequestBytes = 2048

    init(node: Node) throws {
        self.node = node
        listener = try TCPListener(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: node.queue)
    }

    var port: UInt16 { listener.localAddress.port }

    func start() {
        listener.start { [self] connection in
            var buffer = [UInt8]()
            connection.start(onRead: { [self] bytes in
                buffer += bytes
                guard let newline = buffer.firstIndex(of: 10) else {
                    if buffer.count > Self.maxRequestBytes { connection.close() }
                    return
                }
                let request = String(decoding: buffer[..<newline], as: UTF8.self)
                connection.write(Array((answer(request) + "\n").utf8))
                connection.shutdownAfterWrites()
            }, onClose: { _ in })
        }
    }

    private func answer(_ request: String) -> String {
        if request.hasPrefix("login ") { return node.answerLoginRequestOnQueue(String(request.dropFirst(6))) }
        if request.hasPrefix("fetch ") {
            guard let progress = node.fetchFileOnQueue(String(request.dropFirst(6))) else { return "{\"error\":\"no such file\"}" }
            return "{\"missing\":\(progress.missing),\"total\":\(progress.total)}"
        }
        switch request {
        case "presence":
            var fields = [String]()
            for (uid, live) in node.presenceOnQueue() {
                fields.append("\"\(uid)\":{\"online\":\(live.online),\"lastSeen\":\(live.lastSeen.map(String.init) ?? "null"),\"state\":\"\(live.state)\"}")
            }
            return "{" + fields.joined(separator: ",") + "}"
        case "sync":
            node.pickUpLocalWrites()
            return "{\"ok\":true}"
        case "status", "peers":
            let status = node.statusOnQueue()
            guard let data = try? JSONEncoder().encode(status) else { return "{\"error\":\"encoding\"}" }
            return String(decoding: data, as: UTF8.self)
        default:
            return "{\"error\":\"unknown request\"}"
        }
    }

    func close() { listener.close() }
}
