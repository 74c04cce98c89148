import Foundation
import LocalAPI
import Node
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// `lanchat watch PATH`: the CLI's form of a Firebase listener. It streams the running node's
/// events for PATH and prints each as one JSON line: {"event":"put","path":"/x","data":...}.
enum WatchCommand {
    static let watch = Command(spec: CommandSpec(
        name: "watch",
        abstract: "Print every change below a path as it happens, one JSON line per event.",
        discussion: "Needs a running node on the data directory (lanchat run). Stops on Ctrl-C or when the node stops.",
        arguments: [TreeCommands.pathArgument]
    )) { context in
        let path = try context.path(0)
        try context.dataDirectory.requireInitialized()
        guard let api = NodeCommands.apiAddress(context.dataDirectory), let token = APIToken.load(context.dataDirectory) else {
            throw CommandFailure("no node with a local API is running on \(context.dataDirectory.path) (start one with `lanchat run`)")
        }
        let parts = api.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { throw CommandFailure("unreadable API address \(api)") }
        let target = path.segments.map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? $0 }.joined(separator: "/")
        let request = "GET /\(target).json HTTP/1.1\r\nHost: \(api)\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(token)\r\n\r\n"
        let fd = try connect(host: String(parts[0]), port: port)
        defer { close(fd) }
        let bytes = Array(request.utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw CommandFailure("could not reach the node's API") }
        var stream = EventStreamReader()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            for line in try stream.push(Array(chunk[0..<n])) { context.console.print(line) }
        }
        throw CommandFailure("the node closed the stream")
    }

    static func connect(host: String, port: UInt16) throws -> Int32 {
        do {
            return try BlockingSocket.connect(to: SocketAddress(host: host, port: port), timeoutSeconds: 3600)
        } catch {
            throw CommandFailure("cannot connect to the node's API at \(host):\(port): \(error)")
        }
    }
}

/// Reads an HTTP response carrying server-sent events in chunked encoding, and turns each
/// event into one JSON line. Bounded: a line or chunk header above 16 MiB is refused.
struct EventStreamReader {
    private var buffer: [UInt8] = []
    private var headDone = false
    private var chunkRemaining = 0
    private var body: [UInt8] = []
    private var event = ""
    static let limit = 16 << 20

    mutating func push(_ bytes: [UInt8]) throws -> [String] {
        buffer += bytes
        if !headDone {
            guard let end = find([13, 10, 13, 10], in: buffer) else {
                if buffer.count > 65536 { throw CommandFailure("the node's API sent an oversized response head") }
                return []
            }
            let head = String(decoding: buffer[..<end], as: UTF8.self)
            guard head.hasPrefix("HTTP/1.1 200") else {
                let status = head.split(separator: "\r\n").first.map(String.init) ?? head
                let rest = String(decoding: buffer[(end + 4)...], as: UTF8.self)
                throw CommandFailure("the node's API answered \(status) \(rest)")
            }
            buffer.removeFirst(end + 4)
            headDone = true
        }
        // Undo the chunked framing.
        while !buffer.isEmpty {
            if chunkRemaining > 0 {
                let take = min(chunkRemaining, buffer.count)
                body += buffer[0..<take]
                buffer.removeFirst(take)
                chunkRemaining -= take
                if chunkRemaining == 0 { chunkRemaining = -2 }  // the CRLF after the data
                continue
            }
            if chunkRemaining < 0 {
                guard buffer.count >= 2 else { break }
                buffer.removeFirst(2)
                chunkRemaining = 0
                continue
            }
            guard let lineEnd = find([13, 10], in: buffer) else { break }
            let sizeText = String(decoding: buffer[..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size <= EventStreamReader.limit else {
                throw CommandFailure("the node's API sent a malformed stream")
            }
            buffer.removeFirst(lineEnd + 2)
            if size == 0 { return lines() }
            chunkRemaining = size
        }
        return lines()
    }

    /// Complete event lines in the decoded body, as JSON lines.
    private mutating func lines() -> [String] {
        var out = [String]()
        while let newline = body.firstIndex(of: 10) {
            let line = String(decoding: body[..<newline], as: UTF8.self)
            body.removeFirst(newline + 1)
            if line.hasPrefix("event: ") {
                event = String(line.dropFirst(7))
            } else if line.hasPrefix("data: "), event != "keep-alive" {
                let data = String(line.dropFirst(6))
                // The data is {"path":..,"data":..}: add the event name in front.
                if data.hasPrefix("{") {
                    out.append("{\"event\":\"\(event)\"," + data.dropFirst())
                }
            }
        }
        return out
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] && Array(haystack[i..<i + needle.count]) == needle {
            return i
        }
        return nil
    }
}
