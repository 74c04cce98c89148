import Dispatch
import Foundation
import Glibc
import LocalAPI
import Node
import Transport

/// The local API's figures: keep-alive GET and PUT requests per second (one connection, and 4 in
/// parallel) beside a raw loopback request/response echo of the same sizes on the same transport,
/// and the write-to-event latency for 100 simultaneous listeners.
enum APIBenchmark {
    static let token = "bench-token"
    /// How long each turn of a throughput figure lasts.
    static let seconds = 1.0
    /// Turns of the node and its echo ceiling for each figure.
    static let turns = 3
    static let listeners = 100
    static let latencyWrites = 200

    static func run(_ options: BenchOptions) throws -> BenchSection {
        let dir = try MeshBenchmark.tempDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = try MeshBenchmark.node(dir, peers: [])
        try node.start()
        let api = try APIServer(node: node, address: try SocketAddress(host: "127.0.0.1", port: 0), token: token)
        node.queue.sync { api.start() }
        defer {
            node.queue.sync { api.close() }
            node.stop()
        }
        let port = api.address.port

        // The requests measured, and the exact sizes of their exchanges for the ceiling.
        let getRequest = request("GET", "/bench/small.json", body: nil)
        let putRequest = request("PUT", "/bench/small.json?print=silent", body: #"{"text":"hello","n":42}"#)
        let probe = try BenchClient(port: port)
        _ = try probe.exchange(putRequest)
        let getResponse = try probe.exchange(getRequest)
        let putResponse = try probe.exchange(putRequest)
        probe.close()
        log("GET: \(getRequest.count) bytes -> \(getResponse) bytes; PUT: \(putRequest.count) bytes -> \(putResponse) bytes")

        // The node and its echo ceiling take turns, a second each, and each figure is the median
        // of its turns: on two cores a one-connection ping-pong runs at one of two rates, by
        // whether the client's thread and the serving thread share a core, and a single long
        // measure of each side could land them differently.
        var rows: [(String, Double, Double, Double, Double)] = []
        var rounds: [String] = []
        for (name, bytes, responseBytes) in [("GET", getRequest, getResponse), ("PUT", putRequest, putResponse)] {
            var figures: [Double] = []
            for connections in [1, 4] {
                log("\(name) with \(connections) connection(s), against an echo of \(bytes.count) -> \(responseBytes) bytes")
                let echo = try EchoServer(requestBytes: bytes.count, responseBytes: responseBytes)
                defer { echo.close() }
                var apiRates: [Double] = [], ceilings: [Double] = []
                for _ in 0..<turns {
                    apiRates.append(try throughput(port: port, request: bytes, connections: connections))
                    ceilings.append(try throughput(port: echo.port, request: bytes, connections: connections))
                }
                figures += [median(apiRates), median(ceilings)]
                if name == "GET" && connections == 1 {
                    rounds = zip(apiRates, ceilings).map { "\(f($0)) against \(f($1))" }
                }
            }
            rows.append((name, figures[0], figures[1], figures[2], figures[3]))
        }

        log("fsync ceiling")
        let fsyncRate = try fsyncCeiling(dir)

        log("write-to-event latency, \(listeners) listeners, \(latencyWrites) writes")
        let (latencies, putTimes) = try latency(port: port)

        func ms(_ x: Double) -> String { String(format: "%.2f", x) }
        func pct(_ xs: [Double], _ p: Int) -> Double { xs[min(xs.count - 1, xs.count * p / 100)] }
        var lines = [
            "## Local API",
            "",
            "### Keep-alive requests per second on loopback (small values; medians of \(turns) turns of \(Int(seconds)) s, node and echo in turn)",
            "",
            "| request | 1 connection | echo ceiling | ratio | 4 connections | echo ceiling | ratio |",
            "|---|---|---|---|---|---|---|",
        ]
        for (name, one, oneCeiling, four, fourCeiling) in rows {
            lines.append("| \(name == "GET" ? "GET `/bench/small.json`" : "PUT `/bench/small.json?print=silent`") "
                + "| **\(f(one))** | \(f(oneCeiling)) | \(String(format: "%.2f", one / oneCeiling)) "
                + "| **\(f(four))** | \(f(fourCeiling)) | \(String(format: "%.2f", four / fourCeiling)) |")
        }
        lines += [
            "",
            "The ceiling is a trivial request/response echo of the same byte sizes over the same Dispatch-source",
            "transport (one serial queue), measured in the same run. A PUT signs a record and commits it durably",
            "(SQLite WAL, synchronous=FULL) before it is answered, so its real ceiling is the disk: 4 KB write + fsync",
            "one after another on the store's file system ran at \(f(fsyncRate))/s in this run (PUT on 1 connection /",
            "fsync = \(String(format: "%.2f", rows[1].1 / fsyncRate))). Every request is handled on the node's one queue,",
            "so 4 connections share it. GET on 1 connection, turn by turn: \(rounds.joined(separator: ", "))/s.",
            "",
            "### Write to event, \(listeners) simultaneous listeners on the same path, \(latencyWrites) PUTs one after another",
            "",
            "| median | p99 | max | PUT round trip alone (median) |",
            "|---|---|---|---|",
            "| \(ms(pct(latencies, 50))) ms | \(ms(pct(latencies, 99))) ms | \(ms(latencies.last!)) ms | \(ms(pct(putTimes, 50))) ms |",
            "",
            "Measured from sending the PUT until every listener has read its `put` event (the durable write included).",
        ]
        return BenchSection(name: "api", lines: lines)
    }

    /// 4 KB appended and fsynced, one after another for a second, in `dir`: per second.
    static func fsyncCeiling(_ dir: String) throws -> Double {
        let path = dir + "/fsync-probe"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw BenchError("cannot open \(path)") }
        defer { Glibc.close(fd); unlink(path) }
        let block = [UInt8](repeating: 0x61, count: 4096)
        var count = 0
        let seconds = measure {
            let deadline = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
            while DispatchTime.now().uptimeNanoseconds < deadline {
                _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                fsync(fd)
                count += 1
            }
        }
        return Double(count) / seconds
    }

    static func f(_ x: Double) -> String { String(format: "%.0f", x) }

    static func log(_ text: String) { FileHandle.standardError.write(Data("api: \(text)\n".utf8)) }

    static func request(_ method: String, _ target: String, body: String?) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
        if let body { text += "Content-Length: \(body.utf8.count)\r\n\r\n\(body)" } else { text += "\r\n" }
        return Array(text.utf8)
    }

    /// Requests per second over `connections` keep-alive connections, each sending one request
    /// after another for `seconds`.
    static func throughput(port: UInt16, request: [UInt8], connections: Int) throws -> Double {
        let clients = try (0..<connections).map { _ in try BenchClient(port: port) }
        defer { for client in clients { client.close() } }
        for client in clients { _ = try client.exchange(request) }  // warm up
        let counts = LockedCount()
        let failures = LockedCount()
        let group = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        for client in clients {
            let box = UncheckedSendable(client)
            group.enter()
            Thread.detachNewThread {
                var done = 0
                do {
                    while DispatchTime.now().uptimeNanoseconds < deadline {
                        _ = try box.value.exchange(request)
                        done += 1
                    }
                } catch {
                    failures.value += 1
                }
                counts.value += done
                group.leave()
            }
        }
        group.wait()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard failures.value == 0 else { throw BenchError("a throughput client failed") }
        return Double(counts.value) / elapsed
    }

    /// For each of `latencyWrites` PUTs: milliseconds from sending it until all listeners have
    /// its event, and the PUT's own round trip.
    static func latency(port: UInt16) throws -> (latencies: [Double], putTimes: [Double]) {
        let tracker = ArrivalTracker(listeners: listeners, writes: latencyWrites)
        let streams = try (0..<listeners).map { _ in try BenchClient(port: port) }
        defer { for stream in streams { stream.close() } }
        let ready = DispatchSemaphore(value: 0)
        for stream in streams {
            try stream.send(Array("GET /latency.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8))
            let box = UncheckedSendable(stream)
            Thread.detachNewThread {
                var events = EventReader()
                var first = true
                do {
                    while true {
                        for data in try events.next(from: box.value) {
                            if first {
                                first = false
                                ready.signal()
                                continue
                            }
                            // {"path":"/w","data":N}
                            if let n = number(afterDataIn: data) { tracker.arrived(write: n) }
                        }
                    }
                } catch {
                    if first { ready.signal() }
                }
            }
        }
        for _ in 0..<listeners { ready.wait() }
        let writer = try BenchClient(port: port)
        defer { writer.close() }
        var latencies: [Double] = [], putTimes: [Double] = []
        for i in 0..<latencyWrites {
            let put = request("PUT", "/latency/w.json?print=silent", body: "\(i)")
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try writer.exchange(put)
            let answered = DispatchTime.now().uptimeNanoseconds
            guard let allArrived = tracker.wait(for: i, timeout: 10) else { throw BenchError("write \(i): not every listener got its event") }
            latencies.append(Double(allArrived - start) / 1e6)
            putTimes.append(Double(answered - start) / 1e6)
        }
        return (latencies.sorted(), putTimes.sorted())
    }

    /// The integer after `"data":` in an event's JSON.
    static func number(afterDataIn data: ArraySlice<UInt8>) -> Int? {
        let key = Array(#""data":"#.utf8)
        guard data.count > key.count else { return nil }
        var index = data.startIndex
        while index + key.count <= data.endIndex {
            if data[index..<(index + key.count)].elementsEqual(key) {
                var value = 0, any = false
                var i = index + key.count
                while i < data.endIndex, data[i] >= 0x30, data[i] <= 0x39 {
                    value = value * 10 + Int(data[i] - 0x30)
                    any = true
                    i += 1
                }
                return any ? value : nil
            }
            index += 1
        }
        return nil
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// When each write's event has reached every listener.
final class ArrivalTracker: @unchecked Sendable {
    private let lock = NSCondition()
    private let listeners: Int
    private var counts: [Int]
    private var completedAt: [UInt64?]

    init(listeners: Int, writes: Int) {
        self.listeners = listeners
        counts = Array(repeating: 0, count: writes)
        completedAt = Array(repeating: nil, count: writes)
    }

    func arrived(write: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        lock.lock()
        defer { lock.unlock() }
        guard write < counts.count else { return }
        counts[write] += 1
        if counts[write] == listeners {
            completedAt[write] = now
            lock.broadcast()
        }
    }

    /// The moment the last listener got `write`'s event, or nil after `timeout` seconds.
    func wait(for write: Int, timeout: Double) -> UInt64? {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while completedAt[write] == nil {
            if !lock.wait(until: deadline) { return nil }
        }
        return completedAt[write]
    }
}

/// A blocking keep-alive client: sends a request, reads one response framed by Content-Length
/// (or a fixed size for the echo ceiling, which sends no headers).
final class BenchClient: @unchecked Sendable {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var pending: [UInt8] = []

    init(port: UInt16) throws {
        do {
            fd = try BlockingSocket.connect(to: SocketAddress(host: "127.0.0.1", port: port), timeoutSeconds: 30, noDelay: true)
        } catch {
            throw BenchError("connect failed: \(error)")
        }
    }

    func close() { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BenchError("send failed") }
            offset += n
        }
    }

    /// Reads more bytes into `pending`.
    func fill() throws {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw BenchError(n == 0 ? "connection closed" : "recv failed: errno \(errno)") }
        pending.append(contentsOf: buffer[0..<n])
    }

    /// Takes up to `count` bytes of what was read (reading more if nothing is there).
    func take(upTo count: Int) throws -> ArraySlice<UInt8> {
        if pending.isEmpty { try fill() }
        let n = min(count, pending.count)
        let taken = pending[0..<n]
        pending.removeFirst(n)
        return taken
    }

    /// Sends `request` and reads its whole response; returns the response's size in bytes.
    func exchange(_ request: [UInt8]) throws -> Int {
        try send(request)
        return try readResponse(keepingBody: false).size
    }

    /// Sends `request` and returns its response's body.
    func body(of request: [UInt8]) throws -> [UInt8] {
        try send(request)
        return try readResponse(keepingBody: true).body
    }

    /// One response: an HTTP head with a Content-Length, or for the echo server (whose
    /// "responses" start with "ECHO") exactly as many bytes as it announces in its first line.
    /// Its body is copied out only when asked for: throughput runs measure the server, not copies.
    private func readResponse(keepingBody: Bool) throws -> (size: Int, body: [UInt8]) {
        while true {
            if let end = headEnd() {
                let length = contentLength(pending[0..<end])
                let total = end + length
                while pending.count < total { try fill() }
                let body = keepingBody ? Array(pending[end..<total]) : []
                pending.removeFirst(total)
                return (total, body)
            }
            try fill()
        }
    }

    private func headEnd() -> Int? {
        guard pending.count >= 4 else { return nil }
        for i in 0...(pending.count - 4) where pending[i] == 0x0D && pending[i + 1] == 0x0A && pending[i + 2] == 0x0D && pending[i + 3] == 0x0A {
            return i + 4
        }
        return nil
    }

    /// The head's Content-Length, found in the bytes. A lowercased copy searched with Foundation
    /// cost the client about 54,000 instructions per GET response and 19,000 per echo response,
    /// most of the echo's whole exchange, so the ceiling measured mostly the client.
    private func contentLength(_ head: ArraySlice<UInt8>) -> Int {
        let name = Array("content-length:".utf8)
        var i = head.startIndex
        while i + name.count <= head.endIndex {
            if zip(head[i..<(i + name.count)], name).allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 }) {
                let digits = head[(i + name.count)...].drop { $0 == 0x20 }.prefix { $0 >= 0x30 && $0 <= 0x39 }
                return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            }
            i += 1
        }
        return 0
    }
}

/// Reads an event stream's chunks and hands out each event's data line.
struct EventReader {
    private var stream: [UInt8] = []
    private var headDone = false

    mutating func next(from client: BenchClient) throws -> [ArraySlice<UInt8>] {
        var raw: [UInt8] = []
        raw.append(contentsOf: try client.take(upTo: 1 << 20))
        stream.append(contentsOf: raw)
        var events: [ArraySlice<UInt8>] = []
        // The stream as received: head, then chunks "size CRLF data CRLF". Events never span
        // chunks (one chunk each), so it is enough to find "data: " lines ending in LF.
        var index = 0
        var consumed = 0
        if !headDone {
            guard let end = find([0x0D, 0x0A, 0x0D, 0x0A], in: stream, from: 0) else { return [] }
            headDone = true
            index = end + 4
            consumed = index
        }
        while true {
            guard let lineEnd = find([0x0D, 0x0A], in: stream, from: index) else { break }
            let size = Int(String(decoding: stream[index..<lineEnd], as: UTF8.self), radix: 16) ?? 0
            let dataStart = lineEnd + 2
            guard stream.count >= dataStart + size + 2 else { break }
            let chunk = stream[dataStart..<(dataStart + size)]
            if let data = find(Array("data: ".utf8), in: stream, from: chunk.startIndex), data < chunk.endIndex {
                events.append(stream[(data + 6)..<chunk.endIndex])
            }
            index = dataStart + size + 2
            consumed = index
        }
        let result = events.map { ArraySlice(Array($0)) }
        stream.removeFirst(consumed)
        return result
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
        var i = from
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

/// The ceiling: a trivial server on the same transport (Dispatch sources, one serial queue)
/// that answers every `requestBytes` received with `responseBytes`, an HTTP-shaped head with a
/// Content-Length so the same client reads it.
final class EchoServer: @unchecked Sendable {
    let queue = DispatchQueue(label: "lanchat.bench.echo")
    private let listener: TCPListener
    private var connections: [ObjectIdentifier: TCPConnection] = [:]
    let port: UInt16

    init(requestBytes: Int, responseBytes: Int) throws {
        listener = try TCPListener(bind: try SocketAddress(host: "127.0.0.1", port: 0), queue: queue)
        port = listener.localAddress.port
        // A head and a body adding up to exactly `responseBytes`.
        var head = "HTTP/1.1 200 OK\r\nContent-Length: 000000\r\n\r\n"
        let bodyCount = max(0, responseBytes - head.utf8.count)
        head = "HTTP/1.1 200 OK\r\nContent-Length: " + String(format: "%06d", bodyCount) + "\r\n\r\n"
        let response = Array(head.utf8) + Array(repeating: UInt8(ascii: "x"), count: bodyCount)
        let listener = listener
        queue.sync {
            listener.start { [self] connection in
                let key = ObjectIdentifier(connection)
                connections[key] = connection
                var received = 0
                connection.start(onRead: { bytes in
                    received += bytes.count
                    while received >= requestBytes {
                        received -= requestBytes
                        connection.write(response)
                    }
                }, onClose: { [self] _ in connections.removeValue(forKey: key) })
            }
        }
    }

    func close() {
        queue.sync {
            listener.close()
            for connection in connections.values { connection.close() }
            connections.removeAll()
        }
    }
}
