import Crypto
import Dispatch
import Foundation
import Glibc
@testable import LocalAPI
import Node
import Store
import Sync
import Transport
import Tree

/// A running node with its local API on loopback, in this process, on a fresh store.
final class APIFixture: @unchecked Sendable {
    static let token = "test-token-123"

    let directory: String
    let node: Node
    let api: APIServer
    let port: UInt16

    /// `disk` is how the store reaches its files: the real disk unless a test gives a failing one.
    init(idleTimeoutSeconds: Double = APIServer.defaultIdleTimeoutSeconds,
         maxConnections: Int = APIServer.defaultMaxConnections, disk: DiskAccess = .system) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-api-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var config = NodeConfig(listen: try SocketAddress(host: "127.0.0.1", port: 0))
        config.discovery = false
        node = try Node(store: try Store(path: directory + "/store.sqlite", disk: disk), identity: PrivateKey(),
                        network: .named("api-tests"), config: config)
        try node.start()
        api = try APIServer(node: node, address: try SocketAddress(host: "127.0.0.1", port: 0), token: APIFixture.token,
                            idleTimeoutSeconds: idleTimeoutSeconds, maxConnections: maxConnections)
        let api = api
        node.queue.sync { api.start() }
        port = api.address.port
    }

    func shutdown() {
        let api = api
        node.queue.sync { api.close() }
        node.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A new connection to the API.
    func client(receiveBuffer: Int32? = nil) throws -> RawClient {
        try RawClient(port: port, receiveBuffer: receiveBuffer)
    }

    /// One request on a new connection, which is then closed.
    func call(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil,
              auth: Bool = true, timeoutSeconds: Int = 10) throws -> HTTPReply {
        let client = try RawClient(port: port, timeoutSeconds: timeoutSeconds)
        defer { client.close() }
        try client.send(RawClient.request(method, target, headers: headers, body: body, auth: auth))
        return try client.readResponse()
    }
}

struct ClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A parsed response, as a client saw it.
struct HTTPReply: CustomStringConvertible {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as JSON (nil when it does not parse).
    var json: JSONValue? { try? JSONValue.parse(body) }

    var description: String { "\(status) \(headers.map { "\($0.name): \($0.value)" }) \(text.prefix(300))" }
}

/// One server-sent event.
struct SSEEvent: CustomStringConvertible {
    var name: String
    var data: String
    var json: JSONValue? { try? JSONValue.parse(data) }
    var path: String? { json?.objectValue?["path"]?.stringValue }
    var value: JSONValue? { json?.objectValue?["data"] }
    var description: String { "\(name) \(data.prefix(200))" }
}

/// A blocking HTTP/1.1 client over a raw socket, so tests can send any bytes (malformed ones
/// included) and read responses and event streams exactly as they arrive. Reads time out
/// (10 s) instead of hanging a failing test.
final class RawClient: @unchecked Sendable {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// The decoded bytes of an event stream's chunks, not yet split into events.
    private var streamBytes: [UInt8] = []
    /// Every chunk payload of an event stream, as received.
    private(set) var streamChunks: [[UInt8]] = []
    private(set) var streamEnded = false

    init(port: UInt16, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 10) throws {
        do {
            fd = try BlockingSocket.connect(to: SocketAddress(host: "127.0.0.1", port: port),
                                            timeoutSeconds: timeoutSeconds, receiveBuffer: receiveBuffer)
        } catch {
            throw ClientError("connect: \(error)")
        }
    }

    deinit { close() }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    /// Closes the sending direction only.
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    static func request(_ method: String, _ target: String, headers: [(String, String)] = [], body: String? = nil,
                        auth: Bool = true) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if auth { text += "Authorization: Bearer \(APIFixture.token)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n"
        if let body { text += body }
        return Array(text.utf8)
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ClientError("send: errno \(errno)")
            }
            offset += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads more bytes into the buffer; false at end of stream (or a reset).
    @discardableResult
    func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                if start > 0, start == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    start = 0
                }
                buffer += chunk[0..<n]
                return true
            }
            if n == 0 { return false }
            switch errno {
            case EINTR: continue
            case ECONNRESET: return false
            case EAGAIN: throw ClientError("read timed out")
            default: throw ClientError("recv: errno \(errno)")
            }
        }
    }

    private var available: ArraySlice<UInt8> { buffer[start...] }

    /// A line ending in CRLF, without it.
    func readLine() throws -> String {
        while true {
            if let lf = available.firstIndex(of: 0x0A) {
                guard lf > start, buffer[lf - 1] == 0x0D else { throw ClientError("line without CRLF") }
                let line = String(decoding: buffer[start..<(lf - 1)], as: UTF8.self)
                start = lf + 1
                return line
            }
            guard try fill() else { throw ClientError("end of stream inside a line") }
        }
    }

    /// Bytes up to and including the first empty line ("\n\n"): one bare event of a stream
    /// that is not chunked.
    func readBareEvent() throws -> String {
        while true {
            if let end = Self.eventEnd(Array(available)) {
                let text = String(decoding: buffer[start..<(start + end + 2)], as: UTF8.self)
                start += end + 2
                return text
            }
            guard try fill() else { throw ClientError("end of stream inside an event") }
        }
    }

    func readBytes(_ count: Int) throws -> [UInt8] {
        while available.count < count {
            guard try fill() else { throw ClientError("end of stream inside a body") }
        }
        let bytes = Array(buffer[start..<(start + count)])
        start += count
        return bytes
    }

    /// Everything until the server closes.
    func readToEnd() throws -> [UInt8] {
        while try fill() {}
        let bytes = Array(available)
        start = buffer.count
        return bytes
    }

    /// Whether the server closed the connection (reads everything still in flight first).
    func isClosedByServer() -> Bool {
        (try? readToEnd()) != nil
    }

    /// Status line and headers (skipping any 100 Continue).
    func readHead() throws -> (status: Int, headers: [(name: String, value: String)]) {
        while true {
            let statusLine = try readLine()
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else {
                throw ClientError("bad status line \(statusLine)")
            }
            var headers: [(name: String, value: String)] = []
            while true {
                let line = try readLine()
                if line.isEmpty { break }
                guard let colon = line.firstIndex(of: ":") else { throw ClientError("bad header \(line)") }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            if status == 100 { continue }
            return (status, headers)
        }
    }

    /// One whole response.
    func readResponse() throws -> HTTPReply {
        let (status, headers) = try readHead()
        return try readBody(status: status, headers: headers)
    }

    /// The body of a response whose head was read.
    func readBody(status: Int, headers: [(name: String, value: String)]) throws -> HTTPReply {
        var reply = HTTPReply(status: status, headers: headers, body: [])
        if status == 204 || status == 304 { return reply }
        if reply.header("transfer-encoding")?.lowercased() == "chunked" {
            while true {
                let size = try readChunkSize()
                if size == 0 {
                    _ = try readLine()
                    break
                }
                reply.body += try readBytes(size)
                guard try readLine().isEmpty else { throw ClientError("chunk not followed by CRLF") }
            }
        } else if let length = reply.header("content-length").flatMap(Int.init) {
            reply.body = try readBytes(length)
        } else {
            reply.body = try readToEnd()
        }
        return reply
    }

    private func readChunkSize() throws -> Int {
        let line = try readLine()
        guard let size = Int(line.split(separator: ";").first.map(String.init) ?? "", radix: 16) else {
            throw ClientError("bad chunk size line \(line)")
        }
        return size
    }

    // MARK: Event streams

    /// Sends a stream request for `target` and reads the response head.
    func openStream(_ target: String, auth: Bool = true) throws -> (status: Int, headers: [(name: String, value: String)]) {
        try send(RawClient.request("GET", target, headers: [("Accept", "text/event-stream")], auth: auth))
        return try readHead()
    }

    /// The next event of an open stream.
    func nextEvent() throws -> SSEEvent {
        while true {
            if let end = Self.eventEnd(streamBytes) {
                let block = String(decoding: streamBytes[..<end], as: UTF8.self)
                streamBytes.removeSubrange(..<(end + 2))
                var name = "", data = ""
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                    else if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                    else { throw ClientError("unexpected line in event: \(line.debugDescription)") }
                }
                return SSEEvent(name: name, data: data)
            }
            let size = try readChunkSize()
            if size == 0 {
                streamEnded = true
                throw ClientError("stream ended")
            }
            let payload = try readBytes(size)
            guard try readLine().isEmpty else { throw ClientError("chunk not followed by CRLF") }
            streamChunks.append(payload)
            streamBytes += payload
        }
    }

    /// The next event that is not a keep-alive.
    func nextChange() throws -> SSEEvent {
        while true {
            let event = try nextEvent()
            if event.name != "keep-alive" { return event }
        }
    }

    private static func eventEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for i in 0..<(bytes.count - 1) where bytes[i] == 0x0A && bytes[i + 1] == 0x0A { return i }
        return nil
    }
}

/// Runs `body` on `count` threads at once and collects the errors.
func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
    let errors = LockedList()
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            do { try body(i) } catch { errors.append("\(i): \(error)") }
            group.leave()
        }
    }
    group.wait()
    return errors.items
}

final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ item: String) { lock.lock(); list.append(item); lock.unlock() }
    var items: [String] { lock.lock(); defer { lock.unlock() }; return list }
}

extension JSONValue {
    subscript(_ key: String) -> JSONValue? { objectValue?[key] }
}
